"""KILL: hunt a crewmate, check for witnesses, strike, and say why when it does not.

Every KILL decision either sends a strike (a `kill` action) or names why it did not
(`ModuleResult.deferral`, one of `controller.events.DEFERRALS`), so a study can count
conversions. A deferral is never a pause: with a target known, the bot moves towards it.

**The model decides.** Whether a strike is sent is the model's judgement of its witness
scan, nothing else: a strike carries `guard: none`, so a model that misses a witness
kills in front of it, as in the reference. Only the assist `AriaSpec.strike_guard`
(off by default) restores the rules' witness guard, which withholds a strike at its own
tick when a living crewmate other than the target is in the killer's perception
(`controller.programs.KillTarget.guard`: `around` for privileged, `sight` for ego); the
strike's logged action names its guard either way.

**Targets.** A target the planner named must be a living crewmate as far as the agent
knows (else the answer is invalid, `invalid_target`, never replaced by another player);
one it has never seen is searched for (`no_target`), never swapped for another. With
none named, the module takes the nearest living crewmate the agent knows of (straight
line, as the reference's nearest-alive helper): never a fellow impostor, never a player
the agent knows is dead (`dead_as_known`: the public dead, bodies it has seen, its own
kills); ego knows only its own sightings (`obs.last_seen`, from its field of view), in
view first; privileged knows the roster. The target's position used for any decision
is the one known *now* (in view, in sight all around for privileged, or on this step's
roster); an older sighting only tells the hunt where to go, never whether to strike.

**Hunting and closing in.** No crewmate known: walk to a room (`no_target`). Target
known but not seen now: walk to where it was last seen (ego, `hunting`) or follow it by
the roster (privileged, `hunting`). Target seen but beyond `STRIKE_REACH`: follow it
closely (`CLOSE_IN`) for `FOLLOW_TICKS` (`too_far`), so that the next step begins next
to it. Kill cooldown running: shadow the target at `SHADOW` blocks (`cooldown`).

**The witness check and the strike.** Two protocols, one per state view; in both the
model judges a frame taken where the strike begins, an answer other than a clear "no"
to `witnesses_visible` never sends a kill (`unclear`, and a failed call likewise: the
reference counts an error as a witness), and a clear "yes" defers (`witness`).

* `privileged` (one step). The state view lists everyone in sight all around, so the
  half behind the camera is known without turning. With the target within
  `STRIKE_REACH` now, the model judges the frame ahead and that list; on a clear "no"
  the bot strikes at once.
* `ego` (two steps, behind first). The camera covers one half. Step 1, target in view:
  the model judges the view ahead; on a clear "no" the bot follows the target closely
  for `FOLLOW_TICKS` and then turns to look behind (`scan`, or `too_far` when it was
  beyond reach). Step 2: the model judges that frame, the half behind the killer, taken
  where the strike begins; on a clear "no" the bot turns back and strikes. The target
  is then usually out of view (it is behind the killer), so no position of it is used:
  the strike's approach is leashed to `STRIKE_REACH + APPROACH_SLACK` blocks from where
  the killer stands, so it lands only if the target is still where the follow left it,
  and otherwise ends failed with the leash's reason. A target seen at step 2 within
  reach (it walked round into the judged half) is struck without turning; one seen
  beyond reach is followed again and the scan restarts (`target_lost`); a target dead
  by then is `target_lost` too.

Either way the strike begins where the deciding frame was taken and ends within the
leash of it; the approach stops at the rules' strike range, so the killer walks at most
a few blocks. Every answer carries the impostor's private intent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from controller.actions import AnyAction, Follow, GoTo, KillTarget, Look, StrikeGuard
from controller.events import Vec3
from controller.observation import Observation
from harness_aria.modules.base import ModuleResult, failed, reader
from harness_aria.modules.registry import Target, register_module
from harness_aria.parsing import AnswerReader
from harness_aria.spec import AriaSpec
from harness_aria.toolkit import Choice, Toolkit

STRIKE_REACH = 4.0
"""Blocks: the target must be this close, where it is seen now, for a strike."""
APPROACH_SLACK = 1.0
"""Blocks the target may drift during the strike's approach before the program gives up."""
LEASH = STRIKE_REACH + APPROACH_SLACK
"""The strike's leash (`kill.max_distance`): blocks from where the approach begins."""
CLOSE_IN = 1.2
"""Follow distance when closing in: inside the approach's strike range (0.6 of the
rules' kill range, 1.8 blocks by default), so the next step's strike needs no chase."""
SHADOW = 3.0
"""Follow distance while a witness or the cooldown holds the strike back."""
FOLLOW_TICKS = 200
"""How long a close-in or shadowing follow lasts: about one step of free roam (a walk
to a station and a task), so the target is still close when the next step begins."""


@dataclass(frozen=True)
class PendingScan:
    """Ego: the bot followed `target` and turned to look behind at `step`; the behind
    frame is judged, and the strike sent, at the next step."""

    target: str
    step: int


def witness(read: AnswerReader) -> bool:
    """Whether a scan answer reports a witness: anything but a clear "no" does."""
    return read.flag("witnesses_visible") != "no"


def dead_as_known(obs: Observation) -> set[str]:
    """Players this agent knows are dead: the public dead (announced at a meeting, or
    ejected), every body it has seen or been told of, and its own kills. The engine
    announces a death only at the next meeting, so an impostor's own victim, and a
    body it came upon, are known to it before the public list says so."""
    dead = set(obs.known_dead)
    dead |= set(obs.visible_bodies) | set(obs.nearby_bodies) | set(obs.bodies_seen)
    dead |= set(obs.dead_bodies_rooms)
    dead |= {a.target for a in obs.own_actions if a.kind == "killed" and a.target}
    return dead


def _crewmates(obs: Observation) -> set[str]:
    """Players this impostor may kill: not on its team and not dead as far as it knows."""
    dead = dead_as_known(obs)
    return {p for p in obs.players if p != obs.agent and p not in obs.teammates and p not in dead}


def seen_now(obs: Observation, player: str) -> Vec3 | None:
    """Where `player` is now, as far as the filtered observation tells: in view (ego) or
    in sight all around (privileged), or on this step's roster (privileged)."""
    pos = obs.visible_players.get(player)
    if pos is not None:
        return pos
    listed = obs.roster.get(player)
    if listed is not None and listed.step >= obs.step:
        return listed.pos
    return None


def _last_known(obs: Observation, player: str) -> Vec3 | None:
    now = seen_now(obs, player)
    if now is not None:
        return now
    sighting = obs.last_seen.get(player) or obs.roster.get(player)
    return sighting.pos if sighting is not None else None


def offered(obs: Observation, spec: AriaSpec) -> bool:
    """Offered to an impostor whose kill is ready, with a living crewmate it knows of:
    the filtered observation's, so ego has one in its field of view, privileged one in
    sight all around or on the roster (within the privileged radius)."""
    crew = _crewmates(obs)
    prey = [a for a in {**obs.visible_players, **obs.roster} if a in crew]
    return obs.role == "impostor" and obs.kill_ready and bool(prey)


@register_module(
    "KILL",
    budgets={"kill_scan": (0.2, 256)},
    offered=offered,
    rank=10,
    target=Target("a player", order=3, roles=frozenset({"impostor"})),
    number=0,
)
class KillModule:
    """Witness-aware kill with a stated reason for every decision that sends no strike."""

    name = "KILL"

    def __init__(self) -> None:
        self.pending: PendingScan | None = None

    def scanning(self, step: int) -> str | None:
        """The target whose behind-view check is due at `step` (the bot turned at the
        step before), or None."""
        if self.pending is not None and self.pending.step == step - 1:
            return self.pending.target
        return None

    def claim(self, step: int) -> Choice | None:
        """The step after the ego turn: KILL again, unasked, for the behind check."""
        target = self.scanning(step)
        return Choice(module=self.name, target=target) if target is not None else None

    async def run(self, tk: Toolkit, choice: Choice) -> ModuleResult:
        """One KILL decision: the behind scan if one is due, else hunt, scan or strike."""
        obs = tk.obs
        pending = self.pending if self.scanning(obs.step) is not None else None
        self.pending = None
        if pending is not None:
            return await self._behind(tk, pending.target, choice)
        target, why = self._named(tk, choice)
        if why:
            return ModuleResult(invalid=why, memo=f"no kill ({why})", deferral="invalid_target")
        if target is not None and _last_known(obs, target) is None:
            # Named but never seen: its whereabouts are unknown. Search for it, as the
            # reference defers a never-seen target; never swap it for another player.
            return self._wander(tk, choice, unseen=target)
        if target is not None:
            return await self._act(tk, choice, target)
        target = self._pick(tk)
        if target is None:
            return self._wander(tk, choice)
        result = await self._act(tk, choice, target)
        result.harness_built = True  # the harness's pick, not the model's
        return result

    async def _act(self, tk: Toolkit, choice: Choice, target: str) -> ModuleResult:
        """Hunt, shadow, close in, scan or strike at a known target."""
        obs = tk.obs
        intent = choice.intent
        if not obs.kill_ready:
            return self._shadow(tk, target, "cooldown", "the kill is not ready", intent)
        pos = seen_now(obs, target)
        if pos is None or target not in obs.visible_players:
            return self._hunt(tk, target, intent, by_roster=pos is not None)
        distance = math.dist(obs.pos, pos)
        if tk.spec.state == "ego":
            return await self._ahead(tk, target, distance, intent)
        if distance > STRIKE_REACH:
            return self._close_in(tk, target, distance, intent)
        answer = await self._scan(tk, target, "ahead of you", around=True)
        if answer is None:
            return _unusable(tk, "kill scan")
        read = reader(tk, answer)
        intent = read.text("intent") or intent
        if witness(read):
            return self._held_back(tk, target, read, intent)
        return self._strike(tk, target, intent, "no witness in sight all around")

    # ------------------------------------------------------------------ targets
    def _named(self, tk: Toolkit, choice: Choice) -> tuple[str | None, str]:
        """The planner's target, or why it cannot be one (None, '' when none named)."""
        obs = tk.obs
        if not choice.target:
            return None, ""
        t = AnswerReader({"target": choice.target}).choice("target", obs.players)
        if t is None:
            return None, f"kill target {choice.target!r} is not a player"
        if t in obs.teammates or t == obs.agent:
            return None, f"kill target {t!r} is not a crewmate"
        if t in dead_as_known(obs):
            return None, f"kill target {t!r} is dead"
        return t, ""

    def _pick(self, tk: Toolkit) -> str | None:
        """The harness's target when the model named none: the nearest living crewmate
        the agent knows of (straight line from where it stands, ties by name), as the
        reference's nearest-alive helper; ego takes one in view first. Never a fellow
        impostor, never a player the agent knows is dead (`dead_as_known`)."""
        obs = tk.obs
        known = {a: p for a in _crewmates(obs) if (p := _last_known(obs, a)) is not None}
        if tk.spec.state == "ego":
            in_view = {a: p for a, p in known.items() if a in obs.visible_players}
            known = in_view or known
        if not known:
            return None
        return min(known, key=lambda a: (math.dist(obs.pos, known[a]), a))

    # ------------------------------------------------------------------ moving
    def _wander(self, tk: Toolkit, choice: Choice, unseen: str = "") -> ModuleResult:
        """Search another room: nobody known, or the named target (`unseen`) never seen."""
        obs = tk.obs
        rooms = [r for r in tk.geometry.rooms if r != obs.room] or list(tk.geometry.rooms)
        room = rooms[obs.step % len(rooms)]
        who = f"{unseen} was never seen" if unseen else "no crewmate known"
        return ModuleResult(
            actions=[GoTo(room=room)],
            reasoning=f"{who}; search {room}",
            narration=choice.intent
            or (f"looking for {unseen}" if unseen else "looking for someone to kill"),
            memo=f"DEFER kill{' of ' + unseen if unseen else ''}: {who}; went to {room}",
            deferral="no_target",
        )

    def _hunt(self, tk: Toolkit, target: str, intent: str, *, by_roster: bool) -> ModuleResult:
        """Towards a target not in sight: follow it by this step's roster (privileged), or
        walk to where it was last seen."""
        obs = tk.obs
        if by_roster:
            action: AnyAction = _follow(target, CLOSE_IN)
            where = f"{target} by the roster ({tk.geometry.room_at(obs.roster[target].pos)})"
        else:
            pos = _last_known(obs, target)
            assert pos is not None  # a picked or named target is known
            action = GoTo(pos=pos)
            where = f"where {target} was last seen ({tk.geometry.room_at(pos)})"
        return ModuleResult(
            actions=[action],
            reasoning=f"{target} is not in sight; hunt {where}",
            narration=intent or f"hunting {target}",
            memo=f"DEFER kill of {target}: not in sight; hunting",
            deferral="hunting",
        )

    def _close_in(self, tk: Toolkit, target: str, distance: float, intent: str) -> ModuleResult:
        return ModuleResult(
            actions=[_follow(target, CLOSE_IN)],
            reasoning=f"{target} is {distance:.1f} blocks away; close in",
            narration=intent or f"closing in on {target}",
            memo=f"DEFER kill of {target}: {distance:.0f} blocks away; closing in",
            deferral="too_far",
        )

    def _shadow(
        self, tk: Toolkit, target: str, deferral: str, why: str, intent: str
    ) -> ModuleResult:
        """Stay near the target without striking (followed only while seen now)."""
        obs = tk.obs
        if seen_now(obs, target) is None:
            pos = _last_known(obs, target)
            assert pos is not None
            actions: list[AnyAction] = [GoTo(pos=pos)]
        else:
            actions = [_follow(target, SHADOW)]
        return ModuleResult(
            actions=actions,
            reasoning=f"{why}; keep near {target}",
            narration=intent or f"shadowing {target}",
            memo=f"DEFER kill of {target}: {why}",
            deferral=deferral,
        )

    def _held_back(self, tk: Toolkit, target: str, read: AnswerReader, intent: str) -> ModuleResult:
        """A scan that did not clear the strike: a witness, or no clear answer."""
        clear = read.flag("witnesses_visible") == "yes"
        why = "a witness" if clear else "no clear answer about witnesses"
        result = self._shadow(tk, target, "witness" if clear else "unclear", why, intent)
        result.reasoning = read.text("detail") or result.reasoning
        return result

    def _strike(
        self, tk: Toolkit, target: str, intent: str, why: str, turn: bool = False
    ) -> ModuleResult:
        """The strike the model cleared. Its `guard` is `none` (the model's judgement
        stands) unless the assist `AriaSpec.strike_guard` is on: then `around`
        (privileged) or `sight` (ego), re-checked by the rules at the strike's tick. The
        action always names its guard, so the decision's log shows it."""
        guard: StrikeGuard = "none"
        if tk.spec.strike_guard:
            guard = "around" if tk.spec.state == "privileged" else "sight"
        kill = KillTarget(target=target, max_distance=LEASH, guard=guard)
        actions: list[AnyAction] = [Look(behind=True), kill] if turn else [kill]
        return ModuleResult(
            actions=actions,
            reasoning=why,
            narration=intent or f"kill {target}",
            memo=f"kill {target}",
        )

    # ------------------------------------------------------------------ ego scans
    async def _ahead(self, tk: Toolkit, target: str, distance: float, intent: str) -> ModuleResult:
        """Ego step 1: judge the view ahead; if clear, close in and turn to look behind."""
        answer = await self._scan(tk, target, "ahead of you")
        if answer is None:
            return _unusable(tk, "kill scan ahead")
        read = reader(tk, answer)
        intent = read.text("intent") or intent
        if witness(read):
            return self._held_back(tk, target, read, intent)
        self.pending = PendingScan(target=target, step=tk.obs.step)
        near = distance <= STRIKE_REACH
        return ModuleResult(
            actions=[_follow(target, CLOSE_IN), Look(behind=True)],
            reasoning=f"no witness ahead; stay with {target} and check behind",
            narration=intent or f"closing in on {target}",
            memo=f"DEFER kill of {target}: scanning behind before the strike",
            deferral="scan" if near else "too_far",
        )

    async def _behind(self, tk: Toolkit, target: str, choice: Choice) -> ModuleResult:
        """Ego step 2: judge the frame behind (taken where the strike begins); strike on a
        clear no, turning back (with the assist `strike_guard`, the guard then covers the
        half turned back to at the strike's tick)."""
        obs = tk.obs
        intent = choice.intent
        back: list[AnyAction] = [Look(behind=True)]
        if target not in _crewmates(obs):
            return ModuleResult(
                actions=back,
                reasoning=f"{target} is no longer a living crewmate",
                narration=intent,
                memo=f"DEFER kill of {target}: target gone",
                deferral="target_lost",
            )
        if not obs.kill_ready:
            return ModuleResult(
                actions=back,
                reasoning="the kill is not ready",
                narration=intent,
                memo=f"DEFER kill of {target}: cooldown",
                deferral="cooldown",
            )
        answer = await self._scan(tk, target, "behind you")
        if answer is None:
            return _unusable(tk, "kill scan behind")
        read = reader(tk, answer)
        intent = read.text("intent") or intent
        if witness(read):
            clear = read.flag("witnesses_visible") == "yes"
            return ModuleResult(
                actions=back,
                reasoning=read.text("detail") or ("witness behind" if clear else "unclear"),
                narration=intent,
                memo=f"DEFER kill of {target}: "
                + ("witness behind" if clear else "no clear answer about witnesses behind"),
                deferral="witness" if clear else "unclear",
            )
        pos = obs.visible_players.get(target)
        if pos is not None and math.dist(obs.pos, pos) > STRIKE_REACH:
            distance = math.dist(obs.pos, pos)
            self.pending = PendingScan(target=target, step=obs.step)
            return ModuleResult(
                actions=[_follow(target, CLOSE_IN), Look(behind=True)],
                reasoning=f"{target} walked off ({distance:.1f} blocks); follow and scan again",
                narration=intent,
                memo=f"DEFER kill of {target}: it got {distance:.0f} blocks away",
                deferral="target_lost",
            )
        if pos is not None:
            # In the judged frame after all: strike it there; the approach faces it.
            return self._strike(tk, target, intent, "no witness in view")
        return self._strike(tk, target, intent, "no witness ahead or behind", turn=True)

    @staticmethod
    async def _scan(
        tk: Toolkit, target: str, direction: str, *, around: bool = False
    ) -> dict[str, Any] | None:
        """Ask the model about the current frame: who is seen, any witness, the target."""
        return await tk.ask(
            "kill_scan",
            tk.prompt("kill_scan"),
            image=True,
            target=target,
            teammates=", ".join(tk.obs.teammates) or "none",
            direction=direction,
            around=(
                " The state below also lists everyone in sight all around you, behind you"
                " too: anyone it lists but your target and your fellow impostors is a"
                " witness as well."
                if around
                else ""
            ),
        )


def _follow(target: str, distance: float) -> Follow:
    return Follow(agent=target, distance=distance, ticks=FOLLOW_TICKS)


def _unusable(tk: Toolkit, what: str) -> ModuleResult:
    """A scan whose answer could not be read: invalid, and no kill (`unclear`)."""
    result = failed(tk, what)
    result.deferral = "unclear"
    return result
