"""Model-written programs, parsed and never run (`AriaSpec.action: codegen`).

The reference harness has a model write each MOVE and MISSION action as a Mineflayer
JavaScript function and runs it. Here the answer is parsed by acorn in a Node process
that only parses (`parser`), the syntax tree is walked in Python and only the allowed API
in its allowed shapes is translated into the whitelisted program primitives
(`translate`); anything else is refused with a reason and replaced by the reference's
fallback, a random walk (`program`).
"""

from harness_aria.codegen.parser import JsParser, JsSyntaxError, ParserUnavailable, parse_js
from harness_aria.codegen.program import (
    BUDGET,
    PURPOSE,
    Plan,
    Written,
    plan_follow,
    plan_room,
    plan_station,
    scene_of,
    wander,
    write_program,
)
from harness_aria.codegen.translate import Refused, Scene, Translation, translate

__all__ = [
    "BUDGET",
    "PURPOSE",
    "JsParser",
    "JsSyntaxError",
    "ParserUnavailable",
    "Plan",
    "Refused",
    "Scene",
    "Translation",
    "Written",
    "parse_js",
    "plan_follow",
    "plan_room",
    "plan_station",
    "scene_of",
    "translate",
    "wander",
    "write_program",
]
