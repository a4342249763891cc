"""One chat rule on both sides of the bridge: Python's `say` check and the bots' `chat` check."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from controller.programs import ProgramError, Say, parse_program
from controller.protocol import ChatStep
from world.chat import ChatRuleError, chat_rules, check_chat

ROOT = Path(__file__).resolve().parents[2]

# Characters near every rule's edge: whitespace of several kinds, controls, the section
# sign, a slash, a non-BMP character (two UTF-16 units), a lone surrogate.
TRICKY = "ab /\n\r\t\u000b\f\u0085\u00a0\u2028\u3000\ufeff\u0000\u001f\u007f\u009f\u00a7é😀\ud800"


def test_a_newline_is_normalised_and_spoken() -> None:
    program = parse_program([{"op": "say", "text": "I saw Red\nnear the body.\r\n\n  Vote Red "}])
    (action,) = program.actions
    assert isinstance(action, Say)
    assert action.text == "I saw Red near the body. Vote Red"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("/kill Red", "may not start with '/'"),
        ("  \n /op me", "may not start with '/'"),
        ("red is \u00a7cred", "forbidden character U+00A7"),
        ("bell\u0007", "forbidden character U+0007"),
        ("\n\t  \n", "empty"),
        ("x" * 257, "257 characters"),
        ("😀" * 129, "258 characters"),  # 129 code points, 258 UTF-16 units
    ],
)
def test_a_forbidden_line_is_refused_before_dispatch(text: str, why: str) -> None:
    with pytest.raises(ProgramError, match="action 0.say.text") as err:
        parse_program([{"op": "say", "text": text}])
    assert why in str(err.value)


def test_a_low_level_chat_step_obeys_the_same_rule() -> None:
    assert ChatStep(text="a\n\nb").text == "a b"
    with pytest.raises(ValidationError, match="may not start"):
        ChatStep(text="/stop")


def test_length_counts_utf16_units_as_minecraft_does() -> None:
    assert check_chat("😀" * 128) == "😀" * 128
    assert check_chat(" " * 300 + "x" * 256) == "x" * 256  # counted after normalising
    with pytest.raises(ChatRuleError):
        check_chat("😀" * 128 + "x")


def test_the_rules_come_from_the_shared_file() -> None:
    raw = json.loads((ROOT / "world" / "chat_rules.json").read_text("utf-8"))
    assert chat_rules().max_length == raw["max_length"]
    assert chat_rules().forbidden.pattern == raw["forbidden"]
    assert (ROOT / "bots" / "programs.js").read_text().count("chat_rules.json") == 1


_NODE_CHECK = """
const { checkChat } = require(process.argv[1])
const lines = JSON.parse(require('fs').readFileSync(0, 'utf8'))
const out = lines.map(t => {
  try { return { ok: true, text: checkChat(t) } } catch (e) { return { ok: false, why: e.message } }
})
process.stdout.write(JSON.stringify(out))
"""


def _node_verdicts(lines: list[str]) -> list[dict[str, object]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    proc = subprocess.run(
        [node, "-e", _NODE_CHECK, str(ROOT / "bots" / "programs.js")],
        input=json.dumps(lines),  # lone surrogates travel as \\ud800 escapes
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=ROOT,
    )
    verdicts: list[dict[str, object]] = json.loads(proc.stdout)
    return verdicts


def _python_verdict(text: str) -> dict[str, object]:
    try:
        return {"ok": True, "text": check_chat(text)}
    except ChatRuleError as exc:
        return {"ok": False, "why": str(exc)}


@settings(max_examples=1, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from(TRICKY), max_size=12)
        | st.text(alphabet=st.sampled_from("a 😀\n"), min_size=250, max_size=270),
        min_size=300,
        max_size=300,
    )
)
def test_node_accepts_exactly_what_python_accepts(lines: list[str]) -> None:
    """One Node run over 300 generated lines; same verdict and same normalised text."""
    lines += ["/x", " /x", "a§", "😀" * 128, "😀" * 128 + "a", "\ud800", "ok\n"]
    for text, node in zip(lines, _node_verdicts(lines), strict=True):
        py = _python_verdict(text)
        assert node["ok"] == py["ok"], (text, node, py)
        if py["ok"]:
            assert node["text"] == py["text"], text
