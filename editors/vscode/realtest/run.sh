#!/usr/bin/env bash
# The real-VS-Code suite: installs what is missing (realtest/install.sh:
# chromium, Node 24 and code-server 4.139.1, cached), packages the .vsix
# (package.sh, apserver built from this repository inside) and drives it in
# code-server with playwright-core (realtest/*.test.mjs). Screenshots go to
# test-results/real/; UPDATE_SCREENSHOT=1 also refreshes the README's.
#
#   editors/vscode/realtest/run.sh [realtest/FILE.test.mjs...] [--test-name-pattern REGEX]
#   APSERVER_VSIX=old.vsix realtest/run.sh   # test a given package instead
set -euo pipefail
cd "$(dirname "$0")/.."
EXT_DIR=$PWD
start=$(date +%s)
echo "== real VS Code: install what is missing"
APSERVER_CODE_SERVER=$(realtest/install.sh | tail -1)
export APSERVER_CODE_SERVER
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
if [ -n "${APSERVER_VSIX:-}" ]; then
  echo "== real VS Code: testing APSERVER_VSIX=$APSERVER_VSIX"
  # fake-model comes from the package's own apserver
  mkdir -p .test-bin/vsix && (cd .test-bin/vsix && rm -rf extension && unzip -qo "$APSERVER_VSIX" 'extension/bin/*')
  export APSERVER_TEST_BIN="$EXT_DIR/.test-bin/vsix/extension/bin/apserver"
else
  echo "== real VS Code: package the .vsix"
  mkdir -p .test-bin
  export APSERVER_VSIX="$EXT_DIR/.test-bin/apserver-vscode-under-test.vsix"
  ./package.sh "$APSERVER_VSIX" >/dev/null
  export APSERVER_TEST_BIN="$EXT_DIR/bin/apserver"
fi
node scripts/build.mjs >/dev/null # out/lib.cjs for the shared test helpers
echo "== real VS Code: tests"
rm -rf test-results/real # this run's screenshots only
files=()
while [ $# -gt 0 ] && [[ "$1" == *.test.mjs ]]; do files+=("$1"); shift; done
[ ${#files[@]} -gt 0 ] || files=(realtest/*.test.mjs)
# Each test has its own timeout (harness.mjs TEST_TIMEOUT_MS); a file has none.
node --test --test-concurrency=1 "$@" "${files[@]}"
echo "real VS Code suite: $(( $(date +%s) - start )) s"
