#!/usr/bin/env bash
# Install everything the tests need (Python venv, node packages, Chromium) and run
# every test: ruff, mypy --strict, node --test (Foundry module, Roll20 bridge, browser
# tests) and pytest (engine, adapters, daemon, reliability, end-to-end, and the VTT
# clients' recorded requests against the companion's schemas).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}

echo "== Python environment (.venv)"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"

echo "== Node packages (vtt-module)"
(cd vtt-module && npm ci --no-audit --no-fund --loglevel=error)

echo "== Chromium for the browser tests"
if [ -z "${MINDSCAPE_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi
# (MINDSCAPE_CHROMIUM, when set, names a Chromium to use instead of Debian's package)
export MINDSCAPE_CHROMIUM=${MINDSCAPE_CHROMIUM:-$(command -v chromium)}
export MINDSCAPE_BIN="$ROOT/.venv/bin/mindscape"
# Here the browser tests must run: without the daemon or Chromium they fail, not skip.
export MINDSCAPE_REQUIRE_E2E=1

echo "== ruff"
.venv/bin/ruff check engine adapters companion tests bench
echo "== mypy --strict"
.venv/bin/mypy
# The JS suites record every request the VTT clients send to their fakes; pytest then
# checks each against the companion's own schemas (tests/companion/test_client_requests.py).
RECORDED=$(mktemp "${TMPDIR:-/tmp}/mindscape-client-requests.XXXXXX")
trap 'rm -f "$RECORDED"' EXIT
export MINDSCAPE_CLIENT_REQUESTS="$RECORDED"
echo "== node --test"
(cd vtt-module && npm test)
echo "== pytest"
# Hypothesis's own "ci" profile: each property test draws the same examples every run
# (derandomize), so a red run is the change's doing, not a new draw. Run pytest without
# it for fresh draws; a failure prints the blob that replays it.
.venv/bin/python -m pytest --hypothesis-profile=ci
