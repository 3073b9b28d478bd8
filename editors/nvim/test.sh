#!/usr/bin/env bash
# Tests the Neovim plugin: the busted suite inside headless Neovim against
# the real apserver and its scripted model, then a user's session in tmux.
# Installs Debian's neovim, lua-busted and tmux with apt-get when missing
# (quick when they are there). Builds apserver from the repository unless
# APSERVER_TEST_BIN names one.
#
#   editors/nvim/test.sh                  # everything
#   TEST_FILTER=approval editors/nvim/test.sh   # busted tests whose name matches
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
root=$(cd ../.. && pwd)
export PATH="$PATH:/usr/local/go/bin"
step() { printf '\n== %s\n' "$*"; }

step "neovim, lua-busted, tmux"
missing=()
command -v nvim >/dev/null || missing+=(neovim)
[ -f /usr/share/lua/5.1/busted/runner.lua ] || missing+=(lua-busted)
command -v tmux >/dev/null || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # make test runs suites in parallel: wait for another suite's apt-get
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >/dev/null
fi
nvim --version | head -1

step "apserver (go build)"
if [ -z "${APSERVER_TEST_BIN:-}" ]; then
  mkdir -p "$here/.test-bin"
  (cd "$root" && go build -o "$here/.test-bin/apserver" ./cmd/apserver)
  export APSERVER_TEST_BIN="$here/.test-bin/apserver"
fi
"$APSERVER_TEST_BIN" version

step "busted inside nvim --headless"
nvim --headless -u NONE -i NONE -n -c "luafile tests/run.lua"

step "a session in tmux"
tests/tmux.sh "$APSERVER_TEST_BIN"

step "runs and blueprints in tmux"
tests/tmux_runs.sh "$APSERVER_TEST_BIN"
