#!/usr/bin/env bash
# Headless Chromium from Debian's packages, for the test that loads the
# Temporal Web UI and reads what it shows of a window (internal/app,
# TestWindowShowsInTemporalUI). Installs it once; a machine that has
# /usr/bin/chromium is left as it is. The test fails without it.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
if [[ -x "$CHROMIUM" ]]; then
  exit 0
fi

SUDO=()
if [[ "$(id -u)" != 0 ]]; then
  SUDO=(sudo)
fi
echo "Installing Chromium from Debian's packages (first time only)."
start=$SECONDS
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
if [[ ! -x "$CHROMIUM" ]]; then
  echo "apt-get installed chromium, but $CHROMIUM is missing" >&2
  exit 1
fi
echo "Chromium installed in $((SECONDS - start)) s: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
