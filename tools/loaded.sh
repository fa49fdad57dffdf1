#!/usr/bin/env bash
# Runs a command while Debian's stress-ng keeps both cores busy: `tools/loaded.sh make test`
# (CONTRIBUTING.md). The load stops when the command ends, fails or is interrupted; the exit code is
# the command's.
set -euo pipefail
if ! command -v stress-ng >/dev/null; then
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq stress-ng >/dev/null
fi
stress-ng --cpu 2 --quiet &
load=$!
trap 'kill "$load" 2>/dev/null; wait "$load" || true' EXIT  # (a signal to the whole group may have stopped it)
trap 'exit 130' INT
trap 'exit 143' TERM
"$@"
