"""The eight decision modules, registered by name."""

from collections.abc import Callable

from harness_aria.modules.base import Module, ModuleResult
from harness_aria.modules.emergency import EmergencyModule
from harness_aria.modules.kill import KillModule
from harness_aria.modules.meeting import MeetingModule
from harness_aria.modules.mission import MissionModule
from harness_aria.modules.move import MoveModule
from harness_aria.modules.report import ReportModule
from harness_aria.modules.surveillance import SurveillanceModule
from harness_aria.modules.vote import VoteModule

MODULES: dict[str, Callable[[], Module]] = {
    "KILL": KillModule,
    "REPORT": ReportModule,
    "SURVEILLANCE": SurveillanceModule,
    "EMERGENCY": EmergencyModule,
    "MEETING": MeetingModule,
    "VOTE": VoteModule,
    "MOVE": MoveModule,
    "MISSION": MissionModule,
}

__all__ = ["MODULES", "Module", "ModuleResult"]
