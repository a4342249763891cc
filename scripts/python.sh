#!/usr/bin/env bash
# Print the Python interpreter the project uses: the project's .venv when it exists
# (scripts/setup.sh creates it where the system Python is externally managed, PEP 668),
# otherwise python3 from PATH.
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then
  echo "$PWD/.venv/bin/python"
else
  command -v python3
fi
