#!/usr/bin/env bash
# Run the service on its embedded default: sets up what is missing, then starts a private
# Tansu broker + redis-server, the worker, and a demo stream of rounds (Ctrl-C stops everything).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/stream stack --demo "$@"
