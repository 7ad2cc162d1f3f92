#!/usr/bin/env bash
# The 1,000-rater phase of bench/bench_annotator_loop.py and tests/prod/test_pgbouncer.py run the web
# processes through PgBouncer in transaction mode, which they start themselves (bench/pgbouncer.py).
#
# 1. Debian's pgbouncer package (Debian 12: 1.18), the fallback, and the `postgres` account it runs as.
# 2. Debian 13's PgBouncer 1.24.1, built from Debian's source archive (checksum pinned) into
#    .data/pgbouncer/: from 1.21 PgBouncer keeps prepared statements in transaction mode
#    (max_prepared_statements), which halves PostgreSQL's CPU per rated item behind the pooler.
#    Debian 12 has no newer package, and Debian 13's binary needs a newer C library.
# CONCORD_PGBOUNCER=/path/to/pgbouncer skips both and uses that one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${CONCORD_PGBOUNCER:-}" ]; then exit 0; fi

VERSION=1.24.1
SHA256=da72a3aba13072876d055a3e58dd4aba4a5de4ed6148e73033185245598fd3e0
SOURCE="http://deb.debian.org/debian/pool/main/p/pgbouncer/pgbouncer_${VERSION}.orig.tar.gz"
DEST="$PWD/.data/pgbouncer"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

need=()
[ -x /usr/sbin/pgbouncer ] || need+=(pgbouncer)
[ -x "$DEST/bin/pgbouncer" ] && "$DEST/bin/pgbouncer" --version | grep -q "$VERSION" && built=1 || built=0
if [ "$built" -eq 0 ]; then
  pkg-config --exists libevent 2>/dev/null || need+=(libevent-dev)
  pkg-config --exists openssl 2>/dev/null || need+=(libssl-dev)
  command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
  command -v make >/dev/null 2>&1 || need+=(make gcc)
fi
if [ "${#need[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "PgBouncer: missing ${need[*]} and apt-get is unavailable: install PgBouncer and set CONCORD_PGBOUNCER." >&2
    exit 1
  fi
  echo "Installing Debian's ${need[*]} for PgBouncer..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ "$built" -eq 1 ] && exit 0

# A build is kept per user, as pip keeps its wheels: a new checkout (every CI run is one) copies it in a
# second where building took 11 s on 2 cores.
CACHE="${XDG_CACHE_HOME:-${HOME:-$PWD/.data}/.cache}/concord/pgbouncer-$VERSION-$(uname -m)"
if [ -x "$CACHE/bin/pgbouncer" ] && "$CACHE/bin/pgbouncer" --version 2>/dev/null | grep -q "$VERSION" \
    && rm -rf "$DEST" && mkdir -p "$(dirname "$DEST")" && cp -a "$CACHE" "$DEST" \
    && "$DEST/bin/pgbouncer" --version 2>/dev/null | grep -q "$VERSION"; then
  chmod -R a+rX "$DEST"
  exit 0
fi

echo "Building PgBouncer $VERSION from Debian's source archive into .data/pgbouncer/..."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! python3 -c "import urllib.request, sys; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" \
    "$SOURCE" "$work/src.tar.gz" \
  || ! echo "$SHA256  $work/src.tar.gz" | sha256sum -c --quiet -; then
  echo "PgBouncer $VERSION: download failed or checksum differs; the bench falls back to Debian's $(/usr/sbin/pgbouncer --version | head -1)." >&2
  exit 0
fi
tar -xzf "$work/src.tar.gz" -C "$work"
(
  cd "$work/pgbouncer-$VERSION"
  ./configure -q --prefix="$DEST" --without-cares --without-pam --without-systemd >/dev/null
  make -s -j"$(nproc)" >/dev/null 2>&1
  make -s install >/dev/null
)
chmod -R a+rX "$DEST"  # run as the postgres account when started by root
"$DEST/bin/pgbouncer" --version | sed -n 1p
mkdir -p "$(dirname "$CACHE")" && rm -rf "$CACHE.tmp" && cp -a "$DEST" "$CACHE.tmp" && rm -rf "$CACHE" && mv "$CACHE.tmp" "$CACHE" || true
