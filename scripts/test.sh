#!/usr/bin/env bash
# Set up a virtualenv (.venv), install agentwatch with its test extras and promtool, run the test suite twice:
# on the pure-Python sources (the editable install) and on the hot path compiled as `pip install .` builds it.
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
PYTHON=.venv/bin/python ./scripts/compile.sh  # the build the second pass runs and the first compares with
echo "== tests, pure Python"
AGENTWATCH_COMPILED_BUILD="$PWD/build/compiled" .venv/bin/python -m pytest -q "$@"
echo "== tests, compiled hot path"
PYTHONPATH=build/compiled AGENTWATCH_EXPECT_COMPILED=1 exec .venv/bin/python -P -m pytest -q "$@"
