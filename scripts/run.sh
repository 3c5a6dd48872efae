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
#
# V8 heap sizing (measured with `npm run bench`, docs/benchmarks.md): the old generation grows by 30 % over
# what survived the last full GC instead of up to 4x, and the young generation's semi-spaces stop at 2 MB
# instead of 16. Each 2 MB image body is ~10 MB of short-lived strings and buffers; with V8's defaults they
# pile up in a heap that has grown around them. Idle RSS 224-247 -> ~180 MB, peak of 100 concurrent 2 MB
# img2img 380-394 -> ~230 MB, at no measurable cost in throughput (the service's heap is small, so its full
# GCs are short). `--optimize-for-size` reached the same memory but cost a quarter of the throughput.
# SERVICE_NODE_FLAGS replaces these flags (`SERVICE_NODE_FLAGS=` runs with V8's defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-131072}"
# shellcheck disable=SC2086 # several flags, split on purpose
exec node ${SERVICE_NODE_FLAGS---heap-growing-percent=30 --max-semi-space-size=2} dist/cli/main.js "$@"
