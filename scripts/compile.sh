#!/usr/bin/env bash
# Build agentwatch as users install it (hot path compiled with Cython, see setup.py) into build/compiled.
# Put it first on PYTHONPATH to run tests or benchmarks against it (`python -P -m pytest`: with -m or -c, -P keeps
# the source tree in the working directory from shadowing it; a script's own folder is harmless):
#   PYTHONPATH=build/compiled .venv/bin/python benchmarks/collector.py
# Rebuilt from scratch on every call (about a minute), so it never runs older sources or settings than the tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
rm -rf build  # all of it: Cython would reuse C generated under other compiler directives
"$PY" -m pip wheel -q --no-deps -w build/wheel .
"$PY" -m pip install -q --no-deps --target build/compiled build/wheel/agentwatch-*.whl
PYTHONPATH=build/compiled "$PY" -P -c "from agentwatch.compiled import compiled_summary; print(compiled_summary())"
