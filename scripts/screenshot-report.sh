#!/usr/bin/env bash
# Opens a tlblab report (report.html) in headless Chromium, saves a screenshot of the whole page,
# and fails if the page reports any console message or refers to anything outside itself.
#
#   scripts/screenshot-report.sh REPORT.html [OUT.png]
#
# Installs Debian's `chromium` package when it is missing (as root). The report must be
# self-contained: no scripts, and no URL, stylesheet or image it would fetch.
set -euo pipefail
report=${1:?usage: scripts/screenshot-report.sh REPORT.html [OUT.png]}
out=${2:-${report%.html}.png}
[ -f "$report" ] || { echo "screenshot: $report does not exist" >&2; exit 2; }
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "screenshot: chromium is not installed (apt-get install chromium, as root)" >&2
    exit 2
  fi
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# Static checks: nothing to fetch, nothing to run.
if grep -qiE '<script|(src|href)="(https?:)?//|@import|url\(' "$report"; then
  echo "screenshot: $report is not self-contained:" >&2
  grep -noiE '<script|(src|href)="(https?:)?//[^"]*|@import|url\([^)]*\)' "$report" | head -5 >&2
  exit 1
fi

# A tall window, so the screenshot holds the whole report (Chromium's screenshot is the window).
height=$(( $(wc -c < "$report") / 40 + 1200 ))
[ "$height" -gt 16000 ] && height=16000
log=$(mktemp)
trap 'rm -f "$log"' EXIT
abs=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
timeout 120 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1280,"$height" --screenshot="$out" --enable-logging=stderr --v=0 \
  "file://$abs" 2> "$log" >/dev/null || { cat "$log" >&2; echo "screenshot: chromium failed" >&2; exit 1; }
# Any console message (an error, a warning, a failed load reported by the page) fails.
if grep -q ':CONSOLE' "$log"; then
  echo "screenshot: the page reported console messages:" >&2
  grep ':CONSOLE' "$log" >&2
  exit 1
fi
[ -s "$out" ] || { echo "screenshot: no screenshot was written" >&2; exit 1; }
echo "screenshot: $out ($(wc -c < "$out") bytes, 1280×$height)"
