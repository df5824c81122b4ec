#!/usr/bin/env bash
# Set up a virtualenv (.venv) with the agentwatch service (the `service` extra), then run the live demo on an
# embedded Kafka broker.
# Extra arguments go to `agentwatch demo` (e.g. --duration 0 to run until Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[service,broker,html]"
exec .venv/bin/agentwatch demo "$@"
