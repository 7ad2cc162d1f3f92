#!/usr/bin/env bash
# axe-core (the npm package, pinned in tests/a11y/package-lock.json) for the accessibility tests:
# Playwright injects tests/a11y/node_modules/axe-core/axe.min.js into every page they check.
set -euo pipefail
cd "$(dirname "$0")/../tests/a11y"
want=$(sed -n 's/.*"axe-core": "\(.*\)".*/\1/p' package.json)
if [ -f node_modules/axe-core/axe.min.js ] && grep -q "\"version\": \"$want\"" node_modules/axe-core/package.json; then exit 0; fi
if ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "Installing Debian's npm for the accessibility tests..."
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
  else
    echo "npm not found: install Node.js and npm, then run scripts/ensure-axe.sh." >&2
    exit 1
  fi
fi
npm ci --no-audit --no-fund --loglevel=error
