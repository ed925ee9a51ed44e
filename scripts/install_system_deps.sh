#!/usr/bin/env bash
# System packages the test suite uses (Debian/Ubuntu). Idempotent: installs only what is missing.
#   chromium: headless checks of the HTML graph view (tests/test_viz.py) and of the service's web page
#   (tests/test_service_browser.py, driven by playwright with this browser: nothing is downloaded)
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

if [ "${#missing[@]}" -eq 0 ]; then
    echo "system dependencies already installed"
    exit 0
fi

echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
