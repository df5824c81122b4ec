#!/usr/bin/env bash
# Set up a virtualenv (.venv), install agentwatch with its test extras (which include the `service`, `review` and
# `dev` extras), Debian's promtool, Alertmanager (its inhibit rule's test), Chromium (the review page's and the
# HTML report's browser tests) and PostgreSQL server programs (the review store's tests), check the format, lint
# and type-check, then run the whole test suite (tests/unit, then tests/integration). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"

# Debian packages the tests drive for real: promtool (package prometheus), Alertmanager, chromium (Playwright
# drives it; never `playwright install`), postgresql (initdb, pg_ctl).
missing=()
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || missing+=(prometheus-alertmanager)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get install -y -q "${missing[@]}" >/dev/null || { $SUDO apt-get update -q && $SUDO apt-get install -y -q "${missing[@]}"; }
fi
# Format, lint and types first: each fails the run before the tests start (settings in pyproject.toml; the
# pre-commit hooks run the same three).
.venv/bin/python -m ruff format --check --quiet .
.venv/bin/python -m ruff check --quiet .
.venv/bin/python -m mypy
# With arguments: pytest on exactly those. Without: the unit tests on every core (pytest-xdist), then the
# integration tests on two workers, each with a broker of its own, a whole file to a worker (`--dist loadfile`:
# a file's tests share its fixtures, and most of them wait on brokers, servers and browsers rather than compute).
if [ "$#" -gt 0 ]; then exec .venv/bin/python -m pytest -q "$@"; fi
.venv/bin/python -m pytest -q -n auto tests/unit
exec .venv/bin/python -m pytest -q -n 2 --dist loadfile tests/integration
