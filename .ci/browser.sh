#!/usr/bin/env bash
# The browser the report's test (tests/test_report.py) opens the HTML report in: Debian's chromium and its
# chromedriver, driven by Selenium with /usr/bin/chromedriver (nothing is downloaded at run time).
# Idempotent: run it again and it only checks that both are there.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "[browser] installing chromium chromium-driver"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi
echo "[browser] ready: $(/usr/bin/chromedriver --version | cut -d' ' -f1-2)"
