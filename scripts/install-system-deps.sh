#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing.
# As root: apt-get. Otherwise: a clear message naming the missing packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# command-or-path  debian-package
needs=(
  "promtool prometheus"
  "/usr/lib/postgresql/*/bin/initdb postgresql"
  "dieharder dieharder"
  "chromium chromium"
  "chromedriver chromium-driver"
)

missing=()
for pair in "${needs[@]}"; do
  cmd=${pair%% *}; pkg=${pair##* }
  if [[ $cmd == /* ]]; then
    compgen -G "$cmd" >/dev/null || missing+=("$pkg")
  else
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing system packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
