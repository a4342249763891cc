"""The decision modules, each registered by name in its own file (`registry`).

Importing the package imports every file in it (`registry.discover`), so a module file
that registers itself is offered with no other edit. `MODULES` is the reference's eight,
on in every game, in the order the gym environment numbers them.
"""

from collections.abc import Callable

from harness_aria.modules.base import Module, ModuleResult
from harness_aria.modules.registry import discover, register_module, registered

discover()

MODULES: dict[str, Callable[[], Module]] = {e.name: e.make for e in registered() if e.default}
"""The modules on in every game by name (their classes), in the reference's order."""

__all__ = ["MODULES", "Module", "ModuleResult", "register_module"]
