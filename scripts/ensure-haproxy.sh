#!/usr/bin/env bash
# tests/prod/test_three_nodes.py and bench/bench_three_nodes.py put three web nodes behind HAProxy, which
# they start themselves with a config file in a temp dir (bench/nodes.py): only the binary is needed here.
# Debian's haproxy package (Debian 12: 2.6). The package's own service is not started by the tests.
# CONCORD_HAPROXY=/path/to/haproxy skips this and uses that one.
set -euo pipefail
if [ -n "${CONCORD_HAPROXY:-}" ]; then exit 0; fi
if [ -x /usr/sbin/haproxy ]; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "HAProxy: not installed and apt-get is unavailable: install HAProxy and set CONCORD_HAPROXY." >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "Installing Debian's haproxy for the three-node test and bench..."
$SUDO apt-get update -qq
# policy-rc.d answers 101: the package's install script must not start (or enable) the system-wide service.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq haproxy >/dev/null
/usr/sbin/haproxy -v | sed -n 1p  # sed reads it all: head would end the pipe early (SIGPIPE, exit 141 under pipefail)
