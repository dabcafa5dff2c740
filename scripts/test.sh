#!/usr/bin/env bash
# The whole test suite: sets up what is missing, then runs pytest (unit, property, integration, e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# TEST_WORKERS pytest processes (pytest-xdist; 0: all in this one): each has its own broker,
# redis-server and worker fork server, and most integration tests wait on the broker rather than
# use a core, so 4 on 2 cores finish the suite in well under half the time of one.
exec .venv/bin/python -m pytest -q -n "${TEST_WORKERS:-4}" "$@"
