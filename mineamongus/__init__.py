"""MineAmongUs from Python: play a game, or drive one as a PettingZoo environment.

```python
import mineamongus

result = mineamongus.play({"seed": 1}, world="fake", out="runs/api-1")   # scripted sides
env = mineamongus.parallel_env(world="fake", render_mode="rgb_array")    # PettingZoo
aec = mineamongus.env(world="fake")                                      # its AEC form
study = mineamongus.Study.from_yaml("spec.yaml", out="runs/study").run(workers=2)
```

`play` is `mineamongus play` as a function; `parallel_env` and `env` are documented in
`docs/environment.md` (`mineamongus.environment`: `MineAmongUsEnv`); `Study` is
`mineamongus tournament` as a class (`mineamongus.study`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.config import GameConfig
from controller.game import GameResult
from mineamongus.api import load_config, play
from mineamongus.study import Study, StudyResult

if TYPE_CHECKING:
    from pettingzoo import AECEnv

    from mineamongus.environment import MineAmongUsEnv


def parallel_env(*args: Any, **kwargs: Any) -> MineAmongUsEnv:
    """The game as a PettingZoo `ParallelEnv` (arguments: `mineamongus.environment.MineAmongUsEnv`:
    `config`, `world="minecraft"|"fake"`, `render_mode`, `max_steps`, `state`, `sides`,
    `reward_fn`, `out`, and configuration overrides)."""
    from mineamongus.environment import parallel_env as make

    return make(*args, **kwargs)


def env(*args: Any, **kwargs: Any) -> AECEnv:
    """The game as a PettingZoo `AECEnv` (`parallel_env` through `parallel_to_aec`)."""
    from mineamongus.environment import env as make

    return make(*args, **kwargs)


__all__ = [
    "GameConfig",
    "GameResult",
    "Study",
    "StudyResult",
    "env",
    "load_config",
    "parallel_env",
    "play",
]
