#!/usr/bin/env bash
# Installs the npm packages of the live page's browser test (tests/browser: playwright-core,
# which drives Debian's chromium and downloads no browser), exactly as package-lock.json pins.
set -euo pipefail
cd "$(dirname "$0")/../tests/browser"
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is missing: install Debian's nodejs and npm packages" >&2
    exit 1
fi
npm ci --no-audit --no-fund --silent
