#!/usr/bin/env bash
# Builds (once per machine) the Go programs the cluster and S3 tests run as real servers, from the Go module
# proxy, into a cache dir kept between runs: ~/.cache/comfy-durable/tools/<module>@<version>/bin.
#   versitygw          S3-compatible gateway (POSIX backend) for the S3 blob store tests
#   temporal-server    Temporal server, the version the pinned Temporal CLI's dev server reports
#   temporal-sql-tool  Temporal's schema tool from the same module (docker/temporal/setup-postgres.sh runs it)
# Prints KEY=path lines (VERSITYGW_BIN, TEMPORAL_SERVER_BIN, TEMPORAL_SQL_TOOL_BIN, TEMPORAL_SCHEMA_DIR) that
# the tests read from $COMFY_DURABLE_TOOLS_ENV (default: the cache dir's tools.env).
# Usage: scripts/setup-cluster-tools.sh [versitygw|temporal|all]   (default all)
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
TEMPORAL_SERVER_VERSION=v1.32.0

CACHE_ROOT=${COMFY_DURABLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/comfy-durable}
TOOLS=$CACHE_ROOT/tools
ENV_FILE=$TOOLS/tools.env
mkdir -p "$TOOLS"
what=${1:-all}

command -v go >/dev/null 2>&1 || { echo "setup-cluster-tools: the go command is missing (install Go >= 1.24)" >&2; exit 1; }

# install <dir> <package@version>...: go install into <dir>/bin unless every binary is already there.
install_into() {
  local dir=$1 bin=$2
  shift 2
  if [ -x "$dir/bin/$bin" ]; then return 0; fi
  echo "setup-cluster-tools: building $* into $dir (first time on this machine; cached afterwards)" >&2
  mkdir -p "$dir/bin"
  GOBIN="$dir/bin" GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install "$@"
}

record() { # record KEY VALUE: keep tools.env one line per key
  local key=$1 value=$2
  touch "$ENV_FILE"
  grep -v "^$key=" "$ENV_FILE" >"$ENV_FILE.tmp" || true
  echo "$key=$value" >>"$ENV_FILE.tmp"
  mv "$ENV_FILE.tmp" "$ENV_FILE"
  echo "$key=$value"
}

if [ "$what" = all ] || [ "$what" = versitygw ]; then
  dir=$TOOLS/versitygw@$VERSITYGW_VERSION
  install_into "$dir" versitygw "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  record VERSITYGW_BIN "$dir/bin/versitygw"
fi

if [ "$what" = all ] || [ "$what" = temporal ]; then
  dir=$TOOLS/temporal-server@$TEMPORAL_SERVER_VERSION
  install_into "$dir" temporal-server "go.temporal.io/server/cmd/server@$TEMPORAL_SERVER_VERSION"
  if [ ! -x "$dir/bin/temporal-server" ]; then mv "$dir/bin/server" "$dir/bin/temporal-server"; fi
  install_into "$dir" temporal-sql-tool "go.temporal.io/server/cmd/tools/sql@$TEMPORAL_SERVER_VERSION"
  if [ ! -x "$dir/bin/temporal-sql-tool" ]; then mv "$dir/bin/sql" "$dir/bin/temporal-sql-tool"; fi
  # The versioned schema files ship in the module source that go install left in the module cache.
  modsrc=$(go env GOMODCACHE)/go.temporal.io/server@$TEMPORAL_SERVER_VERSION
  if [ ! -d "$modsrc/schema/postgresql/v12" ]; then # binaries cached but the module cache was cleaned
    (cd "$TOOLS" && go mod download "go.temporal.io/server@$TEMPORAL_SERVER_VERSION")
  fi
  record TEMPORAL_SERVER_BIN "$dir/bin/temporal-server"
  record TEMPORAL_SQL_TOOL_BIN "$dir/bin/temporal-sql-tool"
  record TEMPORAL_SCHEMA_DIR "$modsrc/schema/postgresql/v12"
fi
