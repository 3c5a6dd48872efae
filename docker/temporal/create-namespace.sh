#!/bin/sh
# One-shot setup step, run by the `temporal-create-namespace` compose service once the server is up:
# create the namespace (if missing) and register comfy-durable's custom search attributes on it, so a
# production server has them before any worker or API process starts (the app also ensures them at start).
#
# Idempotent: an existing namespace is kept; `search-attribute create` skips attributes that already exist
# with the same type and fails loudly if one exists with a different type.
#
# SEARCH_ATTRIBUTES is a space-separated list of Name=Type pairs, e.g. "RenderModel=Keyword RenderKind=Keyword".
set -euf

ADDRESS=${TEMPORAL_ADDRESS:-temporal:7233}
NAMESPACE=${TEMPORAL_NAMESPACE:-default}
RETENTION=${TEMPORAL_NAMESPACE_RETENTION:-168h}
SEARCH_ATTRIBUTES=${SEARCH_ATTRIBUTES:-}
MAX_ATTEMPTS=${SETUP_MAX_ATTEMPTS:-60}
SLEEP_SECONDS=${SETUP_SLEEP_SECONDS:-5}

# retry <what> <command...>: run until it succeeds, at most MAX_ATTEMPTS times.
retry() {
  what=$1
  shift
  attempt=1
  until "$@"; do
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      echo "create-namespace: $what: still failing after $MAX_ATTEMPTS attempts" >&2
      return 1
    fi
    echo "create-namespace: $what: not ready (attempt $attempt/$MAX_ATTEMPTS), retrying in ${SLEEP_SECONDS}s" >&2
    attempt=$((attempt + 1))
    sleep "$SLEEP_SECONDS"
  done
}

ensure_namespace() {
  if temporal operator namespace describe --address "$ADDRESS" --namespace "$NAMESPACE" >/dev/null 2>&1; then
    echo "create-namespace: namespace '$NAMESPACE' already exists"
    return 0
  fi
  temporal operator namespace create --address "$ADDRESS" --namespace "$NAMESPACE" --retention "$RETENTION"
}

check_search_attributes() {
  listed=$(temporal operator search-attribute list --address "$ADDRESS" --namespace "$NAMESPACE") || return 1
  for pair in $SEARCH_ATTRIBUTES; do
    if ! printf '%s\n' "$listed" | grep -qw -- "${pair%%=*}"; then
      echo "create-namespace: search attribute ${pair%%=*} not listed yet" >&2
      return 1
    fi
  done
}

retry "Temporal server at $ADDRESS" temporal operator cluster health --address "$ADDRESS"
retry "namespace '$NAMESPACE'" ensure_namespace

# Build `--name N --type T` pairs for one create call.
set --
for pair in $SEARCH_ATTRIBUTES; do
  name=${pair%%=*}
  type=${pair#*=}
  if [ -z "$name" ] || [ -z "$type" ] || [ "$name" = "$pair" ]; then
    echo "create-namespace: bad SEARCH_ATTRIBUTES entry '$pair' (want Name=Type)" >&2
    exit 2
  fi
  set -- "$@" --name "$name" --type "$type"
done

if [ "$#" -gt 0 ]; then
  # A namespace created a moment ago may not be visible to every frontend cache yet: retry.
  retry "search attributes" temporal operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" "$@"
  retry "search attributes listed" check_search_attributes
  echo "create-namespace: search attributes registered: $SEARCH_ATTRIBUTES"
fi
echo "create-namespace: namespace '$NAMESPACE' ready"
