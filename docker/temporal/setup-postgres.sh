#!/bin/sh
# One-shot Temporal schema setup for PostgreSQL, run by the `temporal-admin-tools` compose service
# (the temporalio/samples-server compose recipe): create the `temporal` and `temporal_visibility`
# databases and bring both schemas up to the newest version shipped in this admin-tools image.
#
# Every step is idempotent, so this runs on every `docker compose up`:
#   create         keeps an existing database (duplicate-database errors are ignored by the tool)
#   setup-schema   creates the version tables only if missing and never lowers the recorded version
#   update-schema  applies only versions newer than the recorded one (this is also the upgrade path
#                  after bumping the admin-tools/server images)
# The password comes from SQL_PASSWORD (read by temporal-sql-tool), so it never appears in argv.
set -eu

: "${POSTGRES_SEEDS:?POSTGRES_SEEDS (database host) is required}"
: "${POSTGRES_USER:?POSTGRES_USER is required}"
: "${SQL_PASSWORD:?SQL_PASSWORD is required}"
DB_PORT=${DB_PORT:-5432}
DBNAME=${DBNAME:-temporal}
VISIBILITY_DBNAME=${VISIBILITY_DBNAME:-temporal_visibility}
SCHEMA_ROOT=${SCHEMA_ROOT:-/etc/temporal/schema/postgresql/v12}
MAX_ATTEMPTS=${SETUP_MAX_ATTEMPTS:-60}
SLEEP_SECONDS=${SETUP_SLEEP_SECONDS:-2}

# retry <what> <command...>: run until it succeeds, at most MAX_ATTEMPTS times.
retry() {
  what=$1
  shift
  attempt=1
  until "$@"; do
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      echo "setup-postgres: $what: still failing after $MAX_ATTEMPTS attempts" >&2
      return 1
    fi
    echo "setup-postgres: $what: not ready (attempt $attempt/$MAX_ATTEMPTS), retrying in ${SLEEP_SECONDS}s" >&2
    attempt=$((attempt + 1))
    sleep "$SLEEP_SECONDS"
  done
}

sql_tool() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" "$@"
}

setup_database() {
  db=$1
  schema_dir=$2
  echo "setup-postgres: database '$db' (schema $schema_dir)"
  sql_tool --db "$db" create
  sql_tool --db "$db" setup-schema -v 0.0
  sql_tool --db "$db" update-schema -d "$schema_dir"
}

retry "PostgreSQL at $POSTGRES_SEEDS:$DB_PORT" nc -z -w 5 "$POSTGRES_SEEDS" "$DB_PORT"
setup_database "$DBNAME" "$SCHEMA_ROOT/temporal/versioned"
setup_database "$VISIBILITY_DBNAME" "$SCHEMA_ROOT/visibility/versioned"
echo "setup-postgres: schema setup complete"
