#!/usr/bin/env bash
# Build agentwatch as users install it (hot path compiled with Cython, see setup.py) into build/compiled.
# Put it first on PYTHONPATH to run tests or benchmarks against it (`python -P -m pytest`: with -m or -c, -P keeps
# the source tree in the working directory from shadowing it; a script's own folder is harmless):
#   PYTHONPATH=build/compiled .venv/bin/python benchmarks/collector.py
# Rebuilt on every call (Cython regenerates the C of changed modules), so it never runs older sources than the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
rm -rf build/compiled build/wheel
"$PY" -m pip wheel -q --no-deps -w build/wheel .
"$PY" -m pip install -q --no-deps --target build/compiled build/wheel/agentwatch-*.whl
PYTHONPATH=build/compiled "$PY" -P -c "from agentwatch.compiled import compiled_summary; print(compiled_summary())"
