#!/usr/bin/env bash
# Installs Debian's Chromium and its WebDriver (packages chromium, chromium-driver) for the
# console's browser tests, when either is missing. Idempotent. Prints one line saying what it did.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "install-browser: $(chromium --version 2>/dev/null | head -n 1) and chromedriver present"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: chromium and chromedriver are missing and apt-get is not here:" \
        "install Chromium and a matching ChromeDriver, then run this again" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if ! log="$($sudo apt-get update -q 2>&1 && $sudo apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-dejavu-core 2>&1)"; then
    echo "$log" >&2
    echo "install-browser: apt-get install chromium chromium-driver failed (output above)" >&2
    exit 1
fi
echo "install-browser: installed $(chromium --version 2>/dev/null | head -n 1)"
