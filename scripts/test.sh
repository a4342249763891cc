#!/usr/bin/env bash
# Lint, type-check and run every test (unit and integration on the real embedded server).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check controller world harness_aria annotation tests benchmarks
python3 -m ruff format --check controller world harness_aria annotation tests benchmarks
python3 -m mypy
python3 -m pytest -q "$@"
