#!/usr/bin/env bash
# Runs the compiled service (dist/, built by scripts/build.sh) as `npm start`, `npm run worker` and
# `npm run api` do: `exec`, so node replaces this shell and receives signals itself (drain on SIGTERM).
#
# glibc malloc settings, unless already set (measured with `npm run bench`, memory: ~40 MB less idle RSS,
# ~60 MB less at the peak of 100 concurrent 2 MB uploads):
# - MALLOC_ARENA_MAX=2: node's libuv pool and the Temporal core's Rust threads would otherwise get an arena
#   each (up to 8 per core), each keeping the memory freed in it.
# - MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_=128 KiB: image-sized buffers stay mmap'd, so freeing one
#   returns it to the OS (glibc's default threshold grows to the size of the largest buffer freed, after
#   which 2 MB images come from the heap and their pages are kept).
# Other C libraries ignore these variables.
set -euo pipefail
cd "$(dirname "$0")/.."
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-131072}"
exec node dist/cli/main.js "$@"
