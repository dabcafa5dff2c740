#!/usr/bin/env bash
# The whole test suite: sets up what is missing, then runs pytest (unit, property, integration, e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q "$@"
