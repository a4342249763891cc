#!/usr/bin/env bash
# Lint, type-check and run every test (unit and integration on the real embedded server).
# `--fast`: the same checks beside only the unit tests, in parallel (no Minecraft server).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/python.sh)
"$PY" -m ruff check controller world harness_aria annotation mineamongus testkit tests benchmarks
"$PY" -m ruff format --check controller world harness_aria annotation mineamongus testkit tests benchmarks
# Byte code is cached (outside the checkout) even where the environment turns it off:
# the tests start many Python processes (a tournament's games, the CLI), and without
# the cache each one compiles the project afresh (measured: 9 % of the lane's CPU).
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-${TMPDIR:-/tmp}/mineamongus-pycache}"
unset PYTHONDONTWRITEBYTECODE
if [ "${1:-}" = "--fast" ]; then
  # The fast lane: unit tests only (no Minecraft server), on both cores (an idle worker
  # takes tests queued for the other: `worksteal`, about a fifth faster than `load`).
  shift
  # The type check runs beside the tests, its report printed after them: on a cold
  # cache (a fresh clone) it takes about a minute of one core, which it shares with
  # test workers that spend part of their time waiting on games and servers.
  types_log=$(mktemp)
  "$PY" -m mypy >"$types_log" 2>&1 &
  types_pid=$!
  status=0
  "$PY" -m pytest -q -n 2 --dist worksteal --ignore=tests/integration "$@" || status=$?
  types_status=0
  wait "$types_pid" || types_status=$?
  cat "$types_log"
  rm -f "$types_log"
  if [ "$types_status" -ne 0 ]; then status=$types_status; fi
  echo "fast lane: $((SECONDS / 60)) min $((SECONDS % 60)) s (lint, types, unit tests)"
  exit "$status"
fi
"$PY" -m mypy
if [ "$#" -gt 0 ]; then
  # Chosen tests (paths, -k, ...): one run as asked.
  "$PY" -m pytest -q "$@"
else
  # Unit tests on both cores, then the integration tests (they share one embedded
  # server and eight bots, so they run one at a time); both must pass.
  status=0
  "$PY" -m pytest -q -n 2 --dist worksteal --ignore=tests/integration || status=$?
  "$PY" -m pytest -q tests/integration || status=$?
  echo "full run: $((SECONDS / 60)) min $((SECONDS % 60)) s (lint, types, unit and integration tests)"
  exit "$status"
fi
