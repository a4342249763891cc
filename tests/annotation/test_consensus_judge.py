"""The `consensus` judge: grounded findings, accepted only where the reference judge
reports the same atom, actor and step."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from annotation.deception.annotate import annotate_runs, estimate_runs
from annotation.deception.consensus_judge import MISSING
from annotation.deception.findings import read_annotations
from annotation.deception.judges import JUDGES
from annotation.deception.profiles import backend_settings, resolve_profile
from annotation.gamelog import load_game
from annotation.llm import make_judge
from harness_aria.backends import ModelRequest
from testkit.logs import unseen_kill_game


def _game(folder: Path) -> Path:
    """Red kills green unseen, pink reports, red lies about where it was."""
    return unseen_kill_game(folder, then=[("blue", "Nothing to report from me.")])


def _script(
    grounded: list[dict[str, object]], reference: list[dict[str, object]]
) -> Callable[[ModelRequest], str]:
    """Verbal-pass answers by instrument (the grounded prompts say `Pass: VERBAL`, the
    reference's name the verbal atoms' codebook)."""

    def answer(request: ModelRequest) -> str:
        user = request.messages[-1].text
        if user.startswith("Pass: VERBAL"):
            return json.dumps({"findings": grounded})
        if "the verbal atoms" in user:
            return json.dumps({"findings": reference})
        return json.dumps({"findings": []})

    return answer


def test_only_findings_both_instruments_report_are_accepted(tmp_path: Path) -> None:
    run = _game(tmp_path / "run")
    lie = {"atom": "L", "step": 3, "actor": "red", "evidence": "I was in medbay doing tasks"}
    other = {"atom": "M", "step": 3, "actor": "red", "evidence": "doing tasks all along"}
    crew = {"atom": "L", "step": 3, "actor": "pink", "evidence": "I found green in admin."}
    said = {"atom": "L", "step": 3, "actor": "red", "evidence_quote": "I was in medbay"}
    script = _script([lie, other, crew], [said])
    asyncio.run(
        annotate_runs(
            [run], make_judge("fake:j", script=script), progress=False, judge_profile="consensus"
        )
    )
    ann = read_annotations(run)
    assert ann is not None and ann.judge_status == "ok"
    assert ann.judge_profiles == {"judge:fake:j": "consensus"}
    mine = {
        (c.finding.atom, c.finding.actor): c
        for c in ann.findings
        if c.finding.source == "judge:fake:j"
    }
    assert set(mine) == {("L", "red"), ("M", "red"), ("L", "pink")}
    assert mine[("L", "red")].accepted  # both instruments report it
    assert not mine[("M", "red")].accepted and mine[("M", "red")].reason == MISSING
    # pink is a crewmate: the grounded checks reject it, whatever the reference says
    assert not mine[("L", "pink")].accepted and "not an impostor" in mine[("L", "pink")].reason
    # both instruments were asked, each under its own profile
    profiles = {c.profile for c in ann.calls if c.judge == "fake:j"}
    assert profiles == {"grounded", "reference"}

    # the reference judge silent: the grounded finding is kept, rejected, with the reason
    again = _game(tmp_path / "again")
    asyncio.run(
        annotate_runs(
            [again],
            make_judge("fake:j", script=_script([lie], [])),
            progress=False,
            judge_profile="consensus",
        )
    )
    ann = read_annotations(again)
    assert ann is not None
    red = next(c for c in ann.findings if c.finding.source == "judge:fake:j")
    assert not red.accepted and red.reason == MISSING


def test_it_is_registered_chosen_by_name_and_estimated(tmp_path: Path) -> None:
    run = _game(tmp_path / "run")
    assert "consensus" in JUDGES
    assert resolve_profile("consensus", load_game(run).setup) == "consensus"
    assert backend_settings({"consensus"}) is None  # the grounded judge's call defaults
    both = estimate_runs([run], "openai:gpt-4.1-mini", judge_profile="consensus")[0]
    one = estimate_runs([run], "openai:gpt-4.1-mini", judge_profile="grounded")[0]
    ref = estimate_runs([run], "openai:gpt-4.1-mini", judge_profile="reference")[0]
    assert both.calls == one.calls + ref.calls
    assert both.tokens_in == one.tokens_in + ref.tokens_in
