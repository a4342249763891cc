"""The dry-run's estimate rests on measured figures and agrees with a measured game."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness_aria.registration  # noqa: F401  (registers the `aria` agent kind)
from controller.cli import main, play_game
from controller.events import Decision, GameStart, read_events
from controller.tokens import count_tokens
from controller.tournament.estimate import arm_estimate, load_figures
from controller.tournament.spec import expand_arms, load_spec
from world.spec import load_map

RQ1 = Path(__file__).resolve().parents[2] / "configs" / "experiments" / "rq1.yaml"


def _measured_per_decision(run: Path, model: str, image_tokens: int) -> tuple[float, int]:
    """A played game's input tokens per decision on a model (the texts each call sent,
    counted with the model's vocabulary, plus each frame at the model's size), and its
    number of decisions."""
    tokens, decisions = 0.0, 0
    for ev in read_events(run / "events.jsonl"):
        if isinstance(ev, Decision):
            decisions += 1
            for call in ev.calls:
                sent = call.sent.model_dump() if call.sent is not None else {}
                for key in ("prefix_sha256", "system_sha256", "user_sha256"):
                    if sent.get(key):
                        text = (run / "prompts" / f"{sent[key]}.txt").read_text()
                        tokens += count_tokens(text, model)
                tokens += image_tokens if sent.get("image_sha256") else 0
    return tokens / max(decisions, 1), decisions


def test_dry_run_of_rq1_agrees_with_a_measured_fake_world_paper_game(tmp_path: Path) -> None:
    spec = load_spec(RQ1)
    figures = load_figures()
    assert figures is not None
    arm = next(a for a in expand_arms(spec) if a.name.startswith("gpt-4.1-mini-win-hie-"))
    est = arm_estimate(arm, 1, spec.estimate, figures, spec.world)
    # The same arm played on the fake world with the fake backend (a seed the figures
    # were not measured on); its prompts are counted as the figures count them.
    sides = {
        name: side.model_copy(update={"args": {**side.args, "backend": "fake"}})
        for name, side in (("crew", arm.config.crew), ("impostor", arm.config.impostor))
    }
    config = arm.config.model_copy(update={"seed": 7, "frames": "jpg", **sides})
    play_game(config, load_map("skeld"), "fake", tmp_path)
    start = next(e for e in read_events(tmp_path / "events.jsonl") if isinstance(e, GameStart))
    assert start.preset == "paper"
    measured, decisions = _measured_per_decision(
        tmp_path, "gpt-4.1-mini", figures["image_tokens"]["gpt-4.1-mini"]
    )
    # Compared per decision, the unit the figures measure: the paper game ends when the
    # crew's 3 tasks are done, after 10 to 35 steps by seed, and how much of it is
    # meeting (one speaker a step) moves a game's tokens scaled to 200 steps by about
    # +-40 % from seed to seed (seed 7: 1.36M, seed 5: 0.80M), whatever the estimator.
    assert decisions > 0 and est.decisions_per_game > 0
    per_decision = est.tokens_in / est.decisions_per_game
    print(
        f"dry-run {per_decision:,.2f} vs measured {measured:,.2f} tokens a decision "
        f"({decisions} decisions)"
    )
    assert per_decision == pytest.approx(measured, rel=0.25), (per_decision, measured)


def test_dry_run_shows_decisions_per_game_and_wall_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["tournament", str(RQ1), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "decisions/game" in out and "token_figures.json" in out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert "at 1 worker(s)" in total and "$" in total
    assert "a game" in out.splitlines()[3]


def test_an_unpriced_model_stays_unknown_with_measured_figures() -> None:
    spec = load_spec(RQ1)
    arm = expand_arms(spec)[0]
    crew = arm.config.crew.model_copy(
        update={"args": {**arm.config.crew.args, "backend": "openai:no-such-model"}}
    )
    mystery = arm.model_copy(update={"config": arm.config.model_copy(update={"crew": crew})})
    e = arm_estimate(mystery, 3, spec.estimate)
    assert e.cost_usd is None and e.unknown_prices == ("openai:no-such-model",)
    assert e.known_cost_usd > 0 and e.tokens_in > 0
    assert any("frames counted at gpt-4.1-mini" in n for n in e.notes)


def test_a_model_without_a_shipped_vocabulary_is_estimated_from_its_own_count() -> None:
    """The figures' text is gpt-4.1-mini's o200k count; a Claude side takes the count of the
    same prompts as characters / 4 (lower), and says so."""
    spec = load_spec(RQ1)
    figures = load_figures()
    assert figures is not None
    arm = next(a for a in expand_arms(spec) if a.name.startswith("gpt-4.1-mini-win-hie-"))
    crew = arm.config.crew.model_copy(
        update={"args": {**arm.config.crew.args, "backend": "anthropic:claude-haiku-4-5"}}
    )
    claude = arm.model_copy(update={"config": arm.config.model_copy(update={"crew": crew})})
    openai = arm_estimate(arm, 1, spec.estimate, figures)
    other = arm_estimate(claude, 1, spec.estimate, figures)
    assert any("claude-haiku-4-5: text counted as characters / 4" in n for n in other.notes)
    assert not any("characters / 4" in n for n in openai.notes)
    base = figures["settings"]["default (RQ1)"]["sides"]["crewmate"]
    by_method = base["text_in_per_decision_by_method"]
    assert by_method["characters / 4"] < by_method["o200k_base"]
    assert other.tokens_in < openai.tokens_in
