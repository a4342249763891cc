#!/usr/bin/env bash
# Lint, type-check and run every test (unit and integration on the real embedded server).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/python.sh)
"$PY" -m ruff check controller world harness_aria annotation tests benchmarks
"$PY" -m ruff format --check controller world harness_aria annotation tests benchmarks
"$PY" -m mypy
"$PY" -m pytest -q "$@"
