#!/usr/bin/env bash
# The static checks `npm test` runs before the tests: the type check (src, test and bench in one program),
# eslint, the import check and the formatter check, side by side (tsc is single-threaded; the others fit
# beside it). Each one's output is kept apart and printed whole once it ends, and every failing check is named: one failure does
# not hide another, and the script fails if any did.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
checks=(typecheck lint lint:deps format:check)
pids=()
for c in "${checks[@]}"; do
  npm run -s "$c" >"$out/$c.log" 2>&1 &
  pids+=("$!")
done
failed=()
for i in "${!checks[@]}"; do
  c=${checks[$i]}
  wait "${pids[$i]}" || failed+=("$c")
  cat "$out/$c.log"
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "check failed: ${failed[*]}" >&2
  exit 1
fi
