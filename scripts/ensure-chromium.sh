#!/usr/bin/env bash
# The browser tests drive Debian's Chromium: its headless build /usr/bin/chromium-headless-shell (about a
# quarter of the full browser's CPU, tests/conftest.py), and /usr/bin/chromium, which
# tests/ui/test_headless_shell.py compares it with and scripts/screenshots.py uses. Install what is missing.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromium-headless-shell ] || missing+=(chromium-headless-shell)
if [ -n "${CONCORD_CHROMIUM:-}" ] && [ -x "$CONCORD_CHROMIUM" ]; then missing=(); fi
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "Installing Debian's ${missing[*]} for the browser tests..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "Chromium not found (${missing[*]}) and apt-get is unavailable: install it and set CONCORD_CHROMIUM." >&2
exit 1
