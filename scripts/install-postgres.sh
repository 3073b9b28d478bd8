#!/usr/bin/env bash
# scripts/install-postgres.sh: make sure PostgreSQL's server binaries
# (initdb, pg_ctl, postgres) are installed, for the cluster's tests
# (internal/pgtest starts a throwaway server in a temporary directory on a
# unix socket). Installs Debian's postgresql package with apt-get when
# they are missing and this runs as root; otherwise says why not and exits
# 0 (the tests then skip with that message). Prints the directory of the
# binaries on stdout when they are there.
set -euo pipefail

find_bin() {
  if [[ -n "${PG_BINDIR:-}" && -x "$PG_BINDIR/initdb" ]]; then echo "$PG_BINDIR"; return; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then echo "$d"; return; fi
  done
  if command -v pg_config >/dev/null; then
    d="$(pg_config --bindir)"
    if [[ -x "$d/initdb" ]]; then echo "$d"; return; fi
  fi
  if command -v initdb >/dev/null; then dirname "$(command -v initdb)"; return; fi
}

bin="$(find_bin || true)"
if [[ -n "$bin" ]]; then echo "$bin"; exit 0; fi
if [[ "$(id -u)" != 0 ]]; then
  echo "install-postgres: PostgreSQL is not installed and this is not root; install Debian's postgresql package to run the cluster tests" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "install-postgres: PostgreSQL is not installed and there is no apt-get; install PostgreSQL (initdb, pg_ctl) to run the cluster tests" >&2
  exit 0
fi
echo "install-postgres: installing Debian's postgresql package" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends postgresql >&2 || {
  echo "install-postgres: apt-get install postgresql failed; the cluster tests will skip" >&2
  exit 0
}
# Debian's package starts a cluster of its own on port 5432; the tests
# never use it.
find_bin || true
