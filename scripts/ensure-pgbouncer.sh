#!/usr/bin/env bash
# The 1,000-rater phase of bench/bench_annotator_loop.py and tests/prod/test_pgbouncer.py run the web
# processes through Debian's PgBouncer (transaction mode), which they start themselves; install it when missing.
set -euo pipefail
PGBOUNCER="${CONCORD_PGBOUNCER:-/usr/sbin/pgbouncer}"
if [ -x "$PGBOUNCER" ]; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "Installing Debian's pgbouncer for the benchmarks..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pgbouncer >/dev/null
  exit 0
fi
echo "PgBouncer not found at $PGBOUNCER and apt-get is unavailable: install it and set CONCORD_PGBOUNCER." >&2
exit 1
