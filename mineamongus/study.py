"""`mineamongus.Study`: a study (arms x paired seeds) from Python, as `mineamongus tournament`.

```python
import mineamongus

study = mineamongus.Study.from_yaml("configs/studies/smoke.yaml", out="runs/smoke")
result = study.run(workers=2)
result.ok, result.counts, result.games_table()      # a pandas DataFrame, one row per game
```

A thin, typed entry over `controller.tournament`: the spec is read and expanded by
`controller.tournament.spec`, the study folder opened (or resumed) by
`controller.tournament.runner.open_study`, and the games run by its `Runner`, each
its own `mineamongus play` process, locally or on Ray. Running the same study again
resumes it: finished games are kept. A spec seats humans beside models with the
per-seat override (`base: {seats: {red: {agent: human}}}`): each such game serves
its seat's page and prints the address into the game's `play.log` (and
`human/<seat>.url` of its folder).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from controller.tournament.spec import Arm, ExperimentSpec, expand_arms, load_spec

if TYPE_CHECKING:
    import pandas as pd

    from controller.tournament.executors import Executor

log = logging.getLogger(__name__)

Backend = Literal["local", "ray"]


@dataclass(frozen=True)
class StudyResult:
    """How a study's run ended, and where its records and tables are.

    Attributes:
        out: The study folder (`manifest.json`, `spec.yaml`, `games/`, `results/`).
        exit_code: As `mineamongus tournament` exits: 0 every game done, 1 games left
            invalid or failed after their retries, 3 paused (quota, credentials,
            `max_cost_usd`: fix and run again), 130 interrupted.
        message: One line saying why it ended.
        counts: Games by status (`done`, `running`, `pending`, `invalid`, `failed`).
        spent_usd: Measured model spend of the whole study so far.
        games_path: `results/games.parquet` (one row per attempt), or None when the
            tables could not be written (rebuild them with `mineamongus collect`).
        seats_path: `results/seats.parquet` (one row per seat of each attempt), or None.
        notes: What the runner reported on the way (retries, resumed games, ...).
    """

    out: Path
    exit_code: int
    message: str
    counts: dict[str, int]
    spent_usd: float
    games_path: Path | None
    seats_path: Path | None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every game of the study is done."""
        return self.exit_code == 0

    @property
    def runs(self) -> Path:
        """The folder of the games' run folders (`games/<arm>/seed<N>-try<K>/`)."""
        return self.out / "games"

    def run_dirs(self) -> list[Path]:
        """The run folder of every game's counted attempt (the first done one, else the
        latest), as the manifest records them."""
        from controller.tournament.manifest import read_manifest

        manifest = read_manifest(self.out)
        if manifest is None:
            return []
        found = []
        for entry in manifest.entries():
            if not entry.attempts:
                continue
            done = [a for a in entry.attempts if a.outcome == "done"]
            found.append(self.out / (done[0] if done else entry.attempts[-1]).run)
        return found

    def games_table(self) -> pd.DataFrame:
        """`results/games.parquet` as a DataFrame.

        Raises:
            FileNotFoundError: The table was not written (see `message`, `notes`).
        """
        return _table(self.games_path, self.out, "games")

    def seats_table(self) -> pd.DataFrame:
        """`results/seats.parquet` as a DataFrame (`agent_kind` is `human` for a person).

        Raises:
            FileNotFoundError: The table was not written.
        """
        return _table(self.seats_path, self.out, "seats")


def _table(path: Path | None, out: Path, name: str) -> pd.DataFrame:
    import pandas as pd

    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"{out}: no results/{name}.parquet; rebuild it with: mineamongus collect {out}"
        )
    return pd.read_parquet(path)


class Study:
    """A study spec, ready to run into a study folder.

    Args:
        spec: The validated spec.
        path: The spec file (its text is copied into the study folder).
        out: The study folder (default `runs/<spec name>`).

    Use `Study.from_yaml(path)`; the spec's format is `controller.tournament.spec`
    (`docs/tournament.md`).
    """

    def __init__(self, spec: ExperimentSpec, path: Path, out: str | Path | None = None) -> None:
        self.spec = spec
        self.path = Path(path)
        self.out = Path(out) if out is not None else Path("runs") / spec.name
        self.arms: list[Arm] = expand_arms(spec)

    @classmethod
    def from_yaml(cls, path: str | Path, out: str | Path | None = None) -> Study:
        """Read and validate a spec file (every arm's configuration is resolved now).

        Args:
            path: The spec YAML.
            out: The study folder (default `runs/<spec name>`); an existing one is
                resumed.

        Raises:
            SpecError: The file is missing, not YAML, or a field is wrong (named).
        """
        from mineamongus.api import load_harness

        load_harness()  # arms naming `aria` resolve as the CLI resolves them
        return cls(load_spec(path), Path(path), out)

    @property
    def name(self) -> str:
        """The study's name."""
        return self.spec.name

    @property
    def seeds(self) -> list[int]:
        """The paired seeds every arm plays."""
        return self.spec.seed_list()

    @property
    def games(self) -> int:
        """How many games the study has (arms x seeds)."""
        return len(self.arms) * len(self.seeds)

    def run(
        self,
        workers: int | None = None,
        *,
        retries: int | None = None,
        game_timeout_s: float | None = None,
        max_cost_usd: float | None = None,
        extend: bool = False,
        backend: Backend = "local",
        ray_address: str | None = None,
        notify: Callable[[str], None] | None = None,
        progress: bool = True,
    ) -> StudyResult:
        """Run every pending game of the study (a finished study returns at once).

        Args:
            workers: Games at once (default: the spec's `runner.workers`).
            retries: Reruns of an invalid or failed game with the same seed (default:
                `runner.retries`).
            game_timeout_s: Wall-clock limit of one game (default:
                `runner.game_timeout_s`; a game with a human seat waits for the person,
                so give it room).
            max_cost_usd: Start no new game once the measured spend would pass this.
            extend: Add the spec's new arms or seeds to an existing study folder.
            backend: `local` child processes, or `ray` tasks.
            ray_address: The Ray cluster to join (`ray` only; None starts a local one).
            notify: Called with one line per notable event (default: logged, and shown
                in the progress display when there is one).
            progress: Show the study's progress on stderr as `mineamongus tournament`
                does (a live table on a terminal, plain lines elsewhere, e.g. in a
                notebook's log); False shows nothing.

        Returns:
            The outcome, the folder and the result tables.

        Raises:
            SpecError: The spec is invalid.
            ManifestError: The folder holds a different study (use another `out`, or
                `extend=True` for new arms or seeds).
            ValueError: `workers` below 1, `retries` below 0, `game_timeout_s` not above
                0 or `max_cost_usd` below 0 (the message names the value).
        """
        from controller.tournament.display import study_progress
        from controller.tournament.runner import Runner, RunOptions, open_study

        r = self.spec.runner
        options = RunOptions(
            workers=workers if workers is not None else r.workers,
            retries=retries if retries is not None else r.retries,
            game_timeout_s=game_timeout_s if game_timeout_s is not None else r.game_timeout_s,
            max_cost_usd=max_cost_usd,
            extend=extend,
        )
        spec, arms, manifest, notes = open_study(self.path, self.out, extend)
        notes = list(notes)

        # Ray without `workers` runs as many games as the cluster holds.
        slots = options.workers if backend == "local" else workers
        executor = self._executor(backend, slots, ray_address)
        shown = study_progress(spec, arms, executor.slots, self.out) if progress else None

        def note(line: str) -> None:
            notes.append(line)
            if shown is not None:
                shown.note(line)
            (notify or (lambda text: log.info("%s", text)))(line)

        with shown if shown is not None else contextlib.nullcontext():
            runner = Runner(
                self.out,
                spec,
                arms,
                manifest,
                executor,
                options,
                on_change=shown.update if shown is not None else None,
                notify=note,
            )
            result = runner.run()
            if shown is not None:
                shown.update(runner.manifest, 0)
        tables = result.tables
        return StudyResult(
            out=self.out,
            exit_code=result.exit_code,
            message=result.message,
            counts=dict(result.counts),
            spent_usd=result.spent_usd,
            games_path=tables.games if tables is not None else None,
            seats_path=tables.seats if tables is not None else None,
            notes=notes + list(result.notes),
        )

    def _executor(self, backend: Backend, workers: int | None, ray_address: str | None) -> Executor:
        if backend == "ray":
            try:
                from controller.tournament.ray_backend import RayExecutor
            except ImportError as exc:
                raise ImportError(f"{exc}; install it with pip install 'mineamongus[ray]'") from exc
            r = self.spec.runner
            return RayExecutor(
                self.out,
                address=ray_address,
                slots=workers,
                cpus_per_game=r.cpus_per_game,
                memory_gb=r.memory_gb_per_game,
            )
        if backend != "local":
            raise ValueError(f"backend={backend!r}; choose 'local' or 'ray'")
        from controller.tournament.executors import LocalExecutor

        assert workers is not None
        return LocalExecutor(workers)


__all__ = ["Study", "StudyResult"]
