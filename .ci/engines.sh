#!/usr/bin/env bash
# The database servers the cross-engine tests (tests/test_engines.py) run on: the Debian PostgreSQL and
# MariaDB servers, started on localhost only, plus a Java runtime for pyspark. Idempotent: run it again
# and it only checks that everything is up. The Python drivers (psycopg, pymysql, chdb, datafusion,
# pyspark) come from the package's `engines` extra, installed by .ci/run.
#
# The test database is deliberately hostile to naive SQL: PostgreSQL's is created with an ICU en-US
# collation and MariaDB's uses the (case-insensitive) utf8mb4_general_ci default, so the doc-id
# tie-break only passes when the rendered SQL forces byte order.
#
# What the tests connect with (override with these variables; the defaults are what this script sets up):
#   SQLMETRICS_PG_DSN            host=127.0.0.1 port=5432 user=sqlmetrics password=sqlmetrics dbname=sqlmetrics
#   SQLMETRICS_MYSQL_HOST/_PORT/_USER/_PASSWORD/_DATABASE   127.0.0.1 / 3306 / sqlmetrics / sqlmetrics / sqlmetrics
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

say() { printf '[engines] %s\n' "$*"; }

# --- packages --------------------------------------------------------------------------------------
need=()
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 || need+=(mariadb-server)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
if [ "${#need[@]}" -gt 0 ]; then
  say "installing ${need[*]}"
  $SUDO apt-get update -qq
  # Whether the package scripts start the servers depends on the machine (init system, policy-rc.d);
  # either way, they are checked and started below.
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- PostgreSQL ------------------------------------------------------------------------------------
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
pg_ver=$(basename "$(dirname "$pg_bin")")
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$pg_ver main"; then
  say "creating PostgreSQL $pg_ver cluster"
  $SUDO pg_createcluster "$pg_ver" main >/dev/null
fi
if ! pg_lsclusters -h | awk -v v="$pg_ver" '$1==v && $2=="main" {print $4}' | grep -q online; then
  say "starting PostgreSQL $pg_ver (localhost only)"
  $SUDO pg_ctlcluster "$pg_ver" main start -o "-c listen_addresses=localhost"
fi
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
pg_isready -h 127.0.0.1 -p 5432 >/dev/null

if [ -z "$SUDO" ]; then as_postgres=(runuser -u postgres --); else as_postgres=(sudo -u postgres); fi
psql_admin() { "${as_postgres[@]}" psql -v ON_ERROR_STOP=1 -qtA "$@"; }
if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'sqlmetrics'")" != "1" ]; then
  psql_admin -c "CREATE ROLE sqlmetrics LOGIN PASSWORD 'sqlmetrics'"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'sqlmetrics'")" != "1" ]; then
  # ICU en-US sorts 'B' between 'a' and 'c': exactly the trap the renderer must defuse.
  if ! psql_admin -c "CREATE DATABASE sqlmetrics OWNER sqlmetrics TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'" 2>/dev/null; then
    psql_admin -c "CREATE DATABASE sqlmetrics OWNER sqlmetrics TEMPLATE template0 ENCODING 'UTF8'"
  fi
fi
say "PostgreSQL $pg_ver ready: $(psql_admin -d sqlmetrics -c "SELECT datcollate || ' / ' || coalesce(daticulocale, '-') FROM pg_database WHERE datname = 'sqlmetrics'")"

# --- MariaDB ---------------------------------------------------------------------------------------
if ! $SUDO mysqladmin --protocol=socket ping >/dev/null 2>&1; then
  say "starting MariaDB (localhost only)"
  $SUDO install -d -o mysql -g mysql /run/mysqld
  if [ ! -d /var/lib/mysql/mysql ]; then
    $SUDO mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  # mysqld_safe restarts the server if it dies; its output goes to the error log.
  $SUDO sh -c 'nohup mysqld_safe --bind-address=127.0.0.1 --port=3306 >/dev/null 2>&1 &'
  for _ in $(seq 1 60); do $SUDO mysqladmin --protocol=socket ping >/dev/null 2>&1 && break; sleep 1; done
fi
$SUDO mysqladmin --protocol=socket ping >/dev/null
$SUDO mariadb --protocol=socket -e "
  CREATE DATABASE IF NOT EXISTS sqlmetrics CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
  CREATE USER IF NOT EXISTS 'sqlmetrics'@'localhost' IDENTIFIED BY 'sqlmetrics';
  CREATE USER IF NOT EXISTS 'sqlmetrics'@'127.0.0.1' IDENTIFIED BY 'sqlmetrics';
  GRANT ALL PRIVILEGES ON sqlmetrics.* TO 'sqlmetrics'@'localhost';
  GRANT ALL PRIVILEGES ON sqlmetrics.* TO 'sqlmetrics'@'127.0.0.1';"
say "MariaDB ready: $($SUDO mariadb --protocol=socket -N -e 'SELECT VERSION()')"

# --- Java (pyspark) --------------------------------------------------------------------------------
say "Java ready: $(java -version 2>&1 | head -n 1)"
