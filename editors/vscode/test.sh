#!/usr/bin/env bash
# Builds, type-checks and tests the VS Code extension. Installs what is
# missing first: npm packages (npm ci, from package-lock.json) and Debian's
# chromium for the webview test. Builds apserver from the repository root
# with go build; the client and activate() tests run against that binary and
# its `apserver fake-model`.
#
#   editors/vscode/test.sh                      # everything
#   UPDATE_SCREENSHOT=1 editors/vscode/test.sh  # also refresh docs/images/vscode-panel.png
#   APSERVER_TEST_BIN=/path/to/apserver editors/vscode/test.sh  # test that binary, skip go build
set -euo pipefail
cd "$(dirname "$0")"
EXT_DIR=$PWD
ROOT=$(cd ../.. && pwd)
export PATH="$PATH:/usr/local/go/bin"
step() { printf '\n== %s\n' "$*"; }

step "npm packages"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  echo "node_modules is up to date"
fi

step "chromium (for the webview test)"
if [ ! -x /usr/bin/chromium ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # make test runs suites in parallel: wait for another suite's apt-get
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq chromium >/dev/null
fi
/usr/bin/chromium --version 2>/dev/null | head -1 || true

step "apserver (go build)"
if [ -n "${APSERVER_TEST_BIN:-}" ]; then
  echo "using APSERVER_TEST_BIN=$APSERVER_TEST_BIN"
else
  mkdir -p "$EXT_DIR/.test-bin"
  (cd "$ROOT" && go build -o "$EXT_DIR/.test-bin/apserver" ./cmd/apserver)
  export APSERVER_TEST_BIN="$EXT_DIR/.test-bin/apserver"
fi
"$APSERVER_TEST_BIN" version

step "bundle (esbuild)"
node scripts/build.mjs

step "type-check (tsc --noEmit against @types/vscode)"
npx --no-install tsc --noEmit -p .
npx --no-install tsc --noEmit -p webview

step "tests (node --test)"
node --test --test-concurrency=1 test/*.test.mjs
