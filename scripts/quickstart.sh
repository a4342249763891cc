#!/usr/bin/env bash
# Set everything up, then play one quick scripted game on the embedded server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
PY=$(bash scripts/python.sh)
"$PY" -m controller.cli play --preset quick --agents scripted --seed 1 --out "$out"
echo "quickstart: the game's record is in $out (events.jsonl, summary.json)"
