#!/usr/bin/env bash
# Set up a virtualenv (.venv), install agentwatch with its test extras (which include the `service` extra) and
# promtool, run the whole test suite on the pure-Python sources (the editable install), then the hot-path tests on
# the modules compiled as `pip install .` builds them.
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
# The second pass runs what exercises the compiled modules (agentwatch/compiled.py): decode, assembly,
# reconstruction and scoring, offline and through the broker. The rest of the suite does not import them.
HOT_PATH_TESTS=(
  tests/test_compiled.py tests/test_decode.py tests/test_collector_hostile_decode.py tests/test_assembler.py
  tests/test_reconstruct.py tests/test_collector_properties.py tests/test_collector_bad_input.py
  tests/test_collector_e2e.py tests/test_collector_sdk.py tests/test_collector_trace_join.py
  tests/test_scorers_answer.py tests/test_scorers_conversation.py tests/test_scorers_tools.py
  tests/test_policy.py tests/test_production_grading.py tests/test_cli_score.py tests/test_report.py
)
echo "== tests, compiled hot path"
if [ "$#" -eq 0 ]; then set -- "${HOT_PATH_TESTS[@]}"; fi
PYTHONPATH=build/compiled AGENTWATCH_EXPECT_COMPILED=1 exec .venv/bin/python -P -m pytest -q "$@"
