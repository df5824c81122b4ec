#!/usr/bin/env bash
# Set up a virtualenv (.venv), install agentwatch with its test extras (which include the `service` extra) and
# promtool, then run the whole test suite. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q prometheus >/dev/null || { apt-get update -q && apt-get install -y -q prometheus; }
  else sudo apt-get install -y -q prometheus; fi
fi
exec .venv/bin/python -m pytest -q "$@"
