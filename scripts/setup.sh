#!/usr/bin/env bash
# Install everything MineAmongUs needs on a fresh Debian machine:
# Debian packages (scripts/apt-packages.txt), the Node packages from the committed
# lock file (npm ci), and the Python package with its development tools.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
while read -r pkg; do
  case "$pkg" in ''|'#'*) continue ;; esac
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done < scripts/apt-packages.txt
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v node >/dev/null 2>&1; then
  echo "setup: Node.js 20 or newer is required (node not found)" >&2
  exit 1
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "setup: Node.js 20 or newer is required (found $(node --version))" >&2
  exit 1
fi

# npm ci only when the lock file changed since the last install (it compiles native modules).
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.mineamongus-lock-hash
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ]; then
  echo "setup: installing Node packages from package-lock.json (compiles gl and canvas; a few minutes)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > "$stamp"
fi

# A system Python that forbids pip installs (PEP 668) gets a project venv instead.
if python3 -c 'import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'; then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: the system Python is externally managed; creating .venv"
    python3 -m venv .venv
  fi
fi
PY=$(bash scripts/python.sh)
echo "setup: installing the Python package with $PY"
"$PY" -m pip install --quiet --disable-pip-version-check -e ".[dev,ray]"
echo "setup: done ($PY; the command is $(dirname "$PY")/mineamongus)"
