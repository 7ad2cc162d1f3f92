#!/usr/bin/env bash
# The browser tests drive Debian's Chromium at /usr/bin/chromium; install it when missing.
set -euo pipefail
CHROMIUM="${CONCORD_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "Installing Debian's chromium for the browser tests..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "Chromium not found at $CHROMIUM and apt-get is unavailable: install Chromium and set CONCORD_CHROMIUM." >&2
exit 1
