#!/usr/bin/env bash
# scripts/install-codex.sh: install OpenAI's Codex CLI from the npm registry
# into a cache (once), for the end-to-end test that drives the real Codex TUI
# against apserver (e2e/codex_tui_test.go). Prints the path of the codex
# executable on stdout.
#
#   CODEX_VERSION  npm version (default 0.171.0, the protocol apserver speaks;
#                  e2e/codex_tui_test.go runs each version of its list)
#   CODEX_CACHE    npm prefix (default
#                  ${XDG_CACHE_HOME:-$HOME/.cache}/apserver-bench/codex-$CODEX_VERSION:
#                  one per version, so that the tests of two versions can share
#                  a machine)
#
# Exit status: 0 with the path printed; 0 with nothing printed when npm is
# not installed (the test then skips); 1 when the install fails.
set -euo pipefail

CODEX_VERSION="${CODEX_VERSION:-0.171.0}"
CODEX_CACHE="${CODEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/apserver-bench/codex-$CODEX_VERSION}"

find_codex() {
  local p="$CODEX_CACHE/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
  if [[ -x "$p" ]]; then echo "$p"; return; fi
  find "$CODEX_CACHE/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f -perm -u+x 2>/dev/null | head -n 1
}

bin="$(find_codex || true)"
if [[ -n "$bin" ]] && "$bin" --version 2>/dev/null | grep -qF "$CODEX_VERSION"; then
  echo "$bin"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install-codex: npm not found; the Codex TUI test will skip" >&2
  exit 0
fi
echo "install-codex: installing @openai/codex@$CODEX_VERSION into $CODEX_CACHE" >&2
mkdir -p "$CODEX_CACHE"
# Two installs at once (parallel test runs) must not interleave.
exec 9>"$CODEX_CACHE/.install.lock"
flock 9
bin="$(find_codex || true)"
if [[ -z "$bin" ]] || ! "$bin" --version 2>/dev/null | grep -qF "$CODEX_VERSION"; then
  npm install --prefix "$CODEX_CACHE" --no-audit --no-fund --loglevel=error "@openai/codex@$CODEX_VERSION" >&2
  bin="$(find_codex || true)"
fi
if [[ -z "$bin" ]]; then
  echo "install-codex: no codex executable under $CODEX_CACHE after npm install" >&2
  exit 1
fi
echo "$bin"
