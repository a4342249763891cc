"""Upgraders of older records: each brings one version's line to the next.

A record of the current version is validated as it is and refused on any key the
vocabulary does not know. A record of an older version is first brought to the current
one here, one version at a time (`EVENT_UPGRADES`: v1 -> v2 -> v3; `SUMMARY_UPGRADES`
likewise for `summary.json`), and only then validated. Every difference between a version
and the next is written down in its upgrader: keys that were dropped or renamed are
named, and facts an older record held in another form are derived here, the one place
that knows the old form (e.g. each side's `SideFacts` from the config's side arguments).

The log's one stream-level upgrade (the `kill_ready` events a log written before they
existed would hold) is `controller.readiness.derive_kill_readiness`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from controller.vocabulary import ModelCall, SideFacts, flat_settings

Upgrader = Callable[[dict[str, Any]], dict[str, Any]]
"""One version's record (a plain JSON object) -> the next version's."""

SIDES = ("crew", "impostor")
OLD_ARIA_AXES = ("state", "memory", "planning", "reflection", "prompt")
"""The `aria` kind's ablation axes, as records before v3 left them implied (v3 records
carry each side's axes in its `SideFacts`)."""

RETIRED_EVENT_KEYS: dict[str, frozenset[str]] = {}
"""Kind -> keys that older versions' events carried and the current one no longer has:
dropped by the v2 -> v3 upgrader (before v3 every reader ignored unknown keys)."""


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 only added fields (read at their defaults): nothing to change but the version."""
    return {**data, "v": 2}


def _call_v2(raw: Any) -> dict[str, Any]:
    """A v2 call record as v3 holds it: keys the call vocabulary does not know move into
    `extra` (under `v2`), and a record that still cannot be read is kept as a failed call
    naming why (as the v2 reader did), never dropped."""
    if not isinstance(raw, Mapping):
        return ModelCall(
            error_class="unreadable_record",
            error=f"a call record that is a {type(raw).__name__}, not an object",
            cost_usd=None,
        ).model_dump()
    known = {k: v for k, v in raw.items() if k in ModelCall.model_fields}
    unknown = {k: v for k, v in raw.items() if k not in ModelCall.model_fields}
    if unknown:
        extra = dict(known.get("extra") or {})
        extra["v2"] = unknown
        known["extra"] = extra
    try:
        return ModelCall.model_validate(known).model_dump()
    except ValidationError as exc:
        return ModelCall(
            error_class="unreadable_record", error=str(exc).splitlines()[0], cost_usd=None
        ).model_dump()


def side_facts_from_config(side: Any) -> SideFacts:
    """A side's facts from a config's side as older records wrote it: `{agent, args:
    {backend, spec, ...}}`, or the older flat `{backend, spec}` (read as the `aria` kind,
    or the `scripted` kind for `backend: scripted`). A side that says nothing is `unknown`.

    This is the only reader of a kind's arguments: records of the current version carry
    the facts the kind declared (`game_start.sides`).
    """
    if not isinstance(side, Mapping) or not side:
        return SideFacts(kind="unknown", backend="unknown")
    if "agent" not in side and "args" not in side:
        legacy = {k: side[k] for k in ("backend", "base_url", "text_only", "spec") if k in side}
        backend = legacy.get("backend")
        if backend == "scripted":
            side = {"agent": "scripted", "args": {}}
        elif backend is not None:
            side = {"agent": "aria", "args": legacy}
        else:
            return SideFacts(kind="unknown", backend="unknown")
    kind = str(side.get("agent") or "scripted")
    args = side.get("args") or {}
    if not isinstance(args, Mapping):
        args = {}
    address = str(args.get("backend") or kind)
    spec = args.get("spec") or {}
    settings = (
        flat_settings({k: v for k, v in spec.items() if k != "explicit"})
        if isinstance(spec, Mapping)
        else {}
    )
    provider, _, model = address.partition(":")
    has_model = "backend" in args and bool(args.get("backend"))
    return SideFacts(
        kind=kind,
        backend=address,
        model=(model or None) if has_model else None,
        billed=has_model and provider not in ("fake", "scripted"),
        text_only=bool(args.get("text_only") or False),
        profile=str(settings["profile"]) if settings.get("profile") is not None else None,
        settings=settings,
        axes=[a for a in OLD_ARIA_AXES if a in settings],
    )


def sides_from_config(config: Any) -> dict[str, dict[str, Any]]:
    """Both sides' facts (as JSON) from an older record's resolved config."""
    cfg = config if isinstance(config, Mapping) else {}
    return {s: side_facts_from_config(cfg.get(s)).model_dump() for s in SIDES}


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 refuses unknown keys, types `decision.calls` (`ModelCall`) and records each
    side's declared facts in `game_start.sides`."""
    out = {**data, "v": 3}
    for key in RETIRED_EVENT_KEYS.get(str(out.get("kind")), frozenset()):
        out.pop(key, None)
    kind = out.get("kind")
    if kind == "decision" and isinstance(out.get("calls"), list):
        out["calls"] = [_call_v2(c) for c in out["calls"]]
    elif kind == "game_start" and "sides" not in out:
        out["sides"] = sides_from_config(out.get("config"))
    return out


EVENT_UPGRADES: dict[int, Upgrader] = {1: _v1_to_v2, 2: _v2_to_v3}
"""Event schema version -> its upgrader to the next version."""


def upgrade_event(data: dict[str, Any]) -> dict[str, Any]:
    """An event line of any older version as the current version writes it (a line of
    the current version, or a newer one, is returned as is). A line without `v` is v1."""
    v = data.get("v", 1)
    while isinstance(v, int) and v in EVENT_UPGRADES:
        data = EVENT_UPGRADES[v](data)
        v = data["v"]
    return data


def _summary_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 only added fields (`flags`, `resumable`, `cost_usd`, ...)."""
    return {**data, "version": 2}


RETIRED_SUMMARY_KEYS: frozenset[str] = frozenset()
"""Keys older summaries carried that the current one no longer has (dropped)."""


def _summary_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 is written through `RunSummary` and refuses unknown keys."""
    return {k: v for k, v in data.items() if k not in RETIRED_SUMMARY_KEYS} | {"version": 3}


SUMMARY_UPGRADES: dict[int, Upgrader] = {1: _summary_v1_to_v2, 2: _summary_v2_to_v3}
"""`summary.json` version -> its upgrader to the next version."""


def upgrade_summary(data: dict[str, Any]) -> dict[str, Any]:
    """A `summary.json` of any older version as the current version writes it."""
    v = data.get("version", 1)
    while isinstance(v, int) and v in SUMMARY_UPGRADES:
        data = SUMMARY_UPGRADES[v](data)
        v = data["version"]
    return data


__all__ = [
    "EVENT_UPGRADES",
    "RETIRED_EVENT_KEYS",
    "RETIRED_SUMMARY_KEYS",
    "SUMMARY_UPGRADES",
    "side_facts_from_config",
    "sides_from_config",
    "upgrade_event",
    "upgrade_summary",
]
