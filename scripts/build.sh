#!/usr/bin/env bash
# Precompiled JavaScript for `npm start` (and `npm run worker` / `api`): src/ → dist/, same layout, plus the
# workflow bundle (dist/workflow-bundle.js) the worker would otherwise build with webpack at every start.
# Running plain node on dist/ instead of tsx's loader saves the loader thread, esbuild's transforms and their
# source maps: tens of MB of RSS for the whole life of the service (bench/README.md, memory).
# Rebuilt only when something under src/ (or the compiler settings, or the dependencies) is newer than the
# last build, so a second `npm start` costs nothing and a source change is never run stale.
# Tests and tools keep running the TypeScript through tsx.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp="$PWD/dist/.build-stamp"
if [ "${1:-}" != "--force" ] && [ -f "$stamp" ] \
  && [ -z "$(find src tsconfig.json tsconfig.build.json package-lock.json scripts/build.sh -newer "$stamp" -print -quit)" ]; then
  exit 0
fi

echo "setup: compiling src/ into dist/" >&2
tmp="$PWD/dist.build-$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
# Stamped before compiling: a file saved while the build runs is newer than the stamp, so it is built next time.
touch "$tmp/.build-stamp"
# Type errors are `npm run typecheck`'s (and the tests'); the build only strips types.
node node_modules/typescript/bin/tsc -p tsconfig.build.json --noCheck --outDir "$tmp"
cp -R src/api/gallery "$tmp/api/gallery"
# webpack's progress goes to stdout: shown only when the bundle fails.
if ! out=$(node "$tmp/worker/bundle-workflows.js" "$tmp/workflows/index.js" "$tmp/workflow-bundle.js" 2>&1); then
  printf '%s\n' "$out" >&2
  exit 1
fi
rm -rf "$PWD/dist"
mv -T "$tmp" "$PWD/dist"
trap - EXIT
