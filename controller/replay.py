"""Replays from a run folder: one MP4 per agent from its frames, a top-down map video,
and frame montages. Everything is drawn from the event log and the saved frames.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from controller.events import (
    Event,
    GameEnd,
    GameStart,
    Kill,
    MeetingEnd,
    MeetingStart,
    Positions,
)
from controller.record import RecordError, RunRecord, has_log
from controller.worlds.sketch import COLORS, room_color
from world.geometry import ShipGeometry
from world.spec import load_map

log = logging.getLogger(__name__)

SCALE = 8
"""Pixels per block in the map video."""
FPS = 2


class ReplayError(RuntimeError):
    """The run folder cannot be replayed; the message says why."""


def _ffmpeg() -> str:
    path = shutil.which("ffmpeg")
    if path is None:
        raise ReplayError("ffmpeg not found; run scripts/setup.sh (it installs Debian's ffmpeg)")
    return path


def frame_steps(run: Path) -> list[Path]:
    """The per-step frame folders of a run, in step order."""
    root = run / "frames"
    if not root.is_dir():
        return []
    return sorted(
        (p for p in root.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
    )


def agent_videos(run: Path, out: Path, fps: int = FPS) -> dict[str, Path]:
    """One MP4 per agent from its saved frames (steps it was not observed are skipped)."""
    per_agent: dict[str, list[Path]] = {}
    for step_dir in frame_steps(run):
        for f in sorted(step_dir.iterdir()):
            if f.suffix in (".jpg", ".png"):
                per_agent.setdefault(f.stem, []).append(f)
    out.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}
    for agent, files in sorted(per_agent.items()):
        listing = out / f".{agent}.txt"
        lines = []
        for f in files:
            lines += [f"file '{f.resolve()}'", f"duration {1 / fps}"]
        lines.append(f"file '{files[-1].resolve()}'")
        listing.write_text("\n".join(lines) + "\n")
        target = out / f"{agent}.mp4"
        _run_ffmpeg(
            [
                "-f",
                "concat",
                "-safe",
                "0",
                "-i",
                str(listing),
                "-vf",
                "scale=640:360,format=yuv420p",
                "-r",
                str(fps),
                "-c:v",
                "libx264",
                str(target),
            ]
        )
        listing.unlink()
        made[agent] = target
    return made


def _run_ffmpeg(args: list[str], stdin: bytes | None = None) -> None:
    cmd = [_ffmpeg(), "-y", "-loglevel", "error", *args]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        raise ReplayError(f"ffmpeg failed: {proc.stderr.decode(errors='replace')[-800:]}")


def seat_labels(agents: Iterable[str]) -> dict[str, str]:
    """A distinct short label per seat: the shortest prefix (two letters at least) that
    no other seat's name starts with, upper-cased (`blue` BLU, `black` BLA, `red` RE)."""
    names = list(dict.fromkeys(agents))
    out: dict[str, str] = {}
    for name in names:
        others = [n for n in names if n != name]
        n = min(2, len(name))
        while n < len(name) and any(o.startswith(name[:n]) for o in others):
            n += 1
        out[name] = name[:n].upper()
    if len(set(out.values())) < len(out):  # one name is a prefix of another
        out = {name: f"{label}{i}" for i, (name, label) in enumerate(out.items())}
    return out


BODY_HALO = (255, 255, 255)
"""Bodies sit on a white disc ringed in red, so that every colour (black and white
included) stands out on any floor."""
BODY_RING = (230, 0, 0)


class MapPainter:
    """Draws the ship from above, with players, bodies and captions.

    Args:
        geometry: The map.
        agents: Every seat, for their labels (default: the eight colours).
    """

    def __init__(self, geometry: ShipGeometry, agents: Iterable[str] | None = None) -> None:
        self.geometry = geometry
        self.labels = seat_labels(agents if agents is not None else COLORS)
        x0, z0, x1, z1 = geometry.bounds
        self.x0, self.z0 = x0, z0
        w, h = (x1 - x0 + 1) * SCALE, (z1 - z0 + 1) * SCALE
        self.size = (w + w % 2, h + h % 2 + 40)
        base = np.full((self.size[1], self.size[0], 3), 20, dtype=np.uint8)
        for x in range(x0, x1 + 1):
            for z in range(z0, z1 + 1):
                cell = (x, z)
                px, pz = (x - x0) * SCALE, (z - z0) * SCALE + 40
                if geometry.is_walkable(cell):
                    room = geometry.room_at((x + 0.5, 0.0, z + 0.5))
                    color = (110, 110, 110) if room == "hallway" else room_color(room)
                elif geometry.is_wall(cell):
                    color = (200, 200, 200)
                else:
                    continue
                base[pz : pz + SCALE, px : px + SCALE] = color
        self.base = Image.fromarray(base, "RGB")
        draw = ImageDraw.Draw(self.base)
        for room in geometry.rooms:
            cx, _, cz = geometry.room_center(room)
            draw.text(self._xy(cx, cz - 1.5), room, fill=(255, 255, 255), anchor="mm")
        for s in geometry.station_ids():
            sx, sz = self._xy(*self._xz(geometry.station_pos(s)))
            draw.rectangle((sx - 3, sz - 3, sx + 3, sz + 3), outline=(0, 230, 120))

    def label(self, agent: str) -> str:
        """The seat's label on the map (unique among the seats)."""
        return self.labels.get(agent) or agent.upper()

    @staticmethod
    def _label(
        draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, fill: tuple[int, int, int]
    ) -> None:
        # A black outline keeps the text legible on every floor colour.
        draw.text(xy, text, fill=fill, stroke_width=2, stroke_fill=(0, 0, 0))

    @staticmethod
    def _xz(pos: tuple[float, float, float]) -> tuple[float, float]:
        return pos[0], pos[2]

    def _xy(self, x: float, z: float) -> tuple[float, float]:
        return (x - self.x0) * SCALE, (z - self.z0) * SCALE + 40

    def paint(
        self, snap: Positions, bodies: dict[str, tuple[float, float, float]], caption: str
    ) -> np.ndarray:
        """One video frame: the map with every living player and every body."""
        img = self.base.copy()
        draw = ImageDraw.Draw(img)
        for victim, pos in bodies.items():
            px, pz = self._xy(*self._xz(pos))
            color = COLORS.get(victim, (128, 128, 128))
            draw.ellipse(
                (px - 11, pz - 11, px + 11, pz + 11), fill=BODY_HALO, outline=BODY_RING, width=3
            )
            for a, b in (
                ((px - 6, pz - 6), (px + 6, pz + 6)),
                ((px - 6, pz + 6), (px + 6, pz - 6)),
            ):
                draw.line((*a, *b), fill=(0, 0, 0), width=7)
                draw.line((*a, *b), fill=color, width=3)
            self._label(draw, (px + 13, pz - 6), f"{self.label(victim)} body", (255, 255, 255))
        for agent, p in snap.players.items():
            if p.status != "alive":
                continue
            px, pz = self._xy(*self._xz(p.pos))
            color = COLORS.get(agent, (128, 128, 128))
            draw.ellipse((px - 6, pz - 6, px + 6, pz + 6), fill=color, outline=(0, 0, 0))
            self._label(draw, (px + 8, pz - 6), self.label(agent), (255, 255, 255))
        draw.rectangle((0, 0, self.size[0], 38), fill=(0, 0, 0))
        draw.text((8, 12), caption, fill=(255, 255, 255))
        return np.asarray(img, dtype=np.uint8)


def map_frames(events: list[Event], geometry: ShipGeometry) -> list[np.ndarray]:
    """One top-down picture per logged step, with what happened written on it."""
    start = next((e for e in events if isinstance(e, GameStart)), None)
    painter = MapPainter(geometry, start.agents if start is not None else None)
    bodies: dict[str, tuple[float, float, float]] = {}
    note = ""
    frames: list[np.ndarray] = []
    for ev in events:
        if isinstance(ev, Kill):
            bodies[ev.victim] = ev.pos
            note = f"{ev.killer} killed {ev.victim} in {ev.room}"
        elif isinstance(ev, MeetingStart):
            bodies.clear()
            who = f" ({ev.victim}'s body)" if ev.victim else ""
            note = f"meeting {ev.index}: {ev.trigger} by {ev.caller}{who}"
        elif isinstance(ev, MeetingEnd):
            note = f"meeting {ev.index}: {ev.outcome}" + (f" {ev.ejected}" if ev.ejected else "")
        elif isinstance(ev, GameEnd):
            note = f"game over: {ev.winner or 'invalid'} ({ev.ending})"
            if frames:
                last = frames[-1]
                frames.append(last)
        elif isinstance(ev, Positions):
            caption = f"step {ev.step}  tick {ev.tick}" + (f"  |  {note}" if note else "")
            frames.append(painter.paint(ev, bodies, caption))
    return frames


def map_video(run: Path, out: Path, fps: int = FPS, record: RunRecord | None = None) -> Path:
    """The top-down video of a whole game from its log (`record`, when already read).

    Raises:
        ReplayError: The record is broken (named with its file and line), or has nothing
            to draw.
    """
    if record is None:
        record = _read(run)
    events = record.events
    start = next((e for e in events if isinstance(e, GameStart)), None)
    if start is None:
        raise ReplayError(f"{run}/events.jsonl has no game_start event")
    geometry = ShipGeometry(load_map(start.config.get("map", start.map)))
    frames = map_frames(events, geometry)
    if not frames:
        raise ReplayError(f"{run}/events.jsonl has no positions to draw")
    h, w, _ = frames[0].shape
    out.mkdir(parents=True, exist_ok=True)
    target = out / "map.mp4"
    _run_ffmpeg(
        [
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            f"{w}x{h}",
            "-r",
            str(fps),
            "-i",
            "-",
            "-vf",
            "format=yuv420p",
            "-c:v",
            "libx264",
            str(target),
        ],
        stdin=b"".join(f.tobytes() for f in frames),
    )
    return target


def montage(run: Path, step: int | None = None, columns: int = 4) -> Image.Image:
    """A grid of every agent's frame at one step (the last step with frames by default)."""
    steps = frame_steps(run)
    if not steps:
        raise ReplayError(f"{run} has no frames (was the game played with --frames off?)")
    chosen = steps[-1]
    if step is not None:
        match = [p for p in steps if int(p.name) == step]
        if not match:
            raise ReplayError(f"no frames for step {step} in {run}/frames")
        chosen = match[0]
    files = sorted(f for f in chosen.iterdir() if f.suffix in (".jpg", ".png"))
    tiles = [Image.open(f).convert("RGB").resize((320, 180)) for f in files]
    rows = (len(tiles) + columns - 1) // columns
    sheet = Image.new("RGB", (320 * columns, 200 * rows), (0, 0, 0))
    draw = ImageDraw.Draw(sheet)
    for i, (tile, f) in enumerate(zip(tiles, files, strict=True)):
        x, y = (i % columns) * 320, (i // columns) * 200
        sheet.paste(tile, (x, y + 20))
        draw.text((x + 4, y + 4), f"{f.stem} (step {int(chosen.name)})", fill=(255, 255, 255))
    return sheet


def _read(run: Path) -> RunRecord:
    """The run's record; a game that did not finish is drawn too (and said to be
    partial), a broken record is refused."""
    try:
        return RunRecord.read(run, partial=True)
    except RecordError as exc:
        raise ReplayError(str(exc)) from exc


def replay(run: Path, progress: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Write `run/replay/<agent>.mp4`, `run/replay/map.mp4` and `run/replay/montage.png`.

    Raises:
        ReplayError: No log, a broken record (its file, line and fix), or nothing to
            draw; nothing is written then.
    """
    say = progress or (lambda _line: None)
    if not has_log(run):
        raise ReplayError(f"{run} has no events.jsonl")
    record = _read(run)  # a broken record is refused before anything is written
    if record.partial:
        say(f"partial game: {run}/events.jsonl has no game_end (killed or still running)")
    out = run / "replay"
    made: dict[str, Path] = {}
    say("drawing the top-down map video")
    made["map"] = map_video(run, out, record=record)
    if frame_steps(run):
        say("encoding one video per agent from its frames")
        made.update(agent_videos(run, out))
        sheet = montage(run)
        sheet.save(out / "montage.png")
        made["montage"] = out / "montage.png"
    else:
        say("no frames saved (--frames off): only the map video")
    return made
