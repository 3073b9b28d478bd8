#!/usr/bin/env bash
# Drives `apserver exec` with the official Codex SDK (@openai/codex-sdk)
# against `apserver fake-model`. Installs what is missing first: the npm
# packages (npm ci from package-lock.json, without the optional packages that
# carry Codex's own binary, which the test replaces with apserver). Builds
# apserver from the repository root unless APSERVER_TEST_BIN names one.
#
#   e2e/sdk/test.sh
#   APSERVER_TEST_BIN=/path/to/apserver e2e/sdk/test.sh
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
export PATH="$PATH:/usr/local/go/bin"

need=$(node -p "require('./node_modules/@openai/codex-sdk/package.json').engines.node" 2>/dev/null || true)
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --omit=optional
  need=$(node -p "require('./node_modules/@openai/codex-sdk/package.json').engines.node")
fi
node -e "
const [maj] = process.versions.node.split('.').map(Number);
const min = Number((process.argv[1].match(/>=\s*(\d+)/) || [0, 0])[1]);
if (maj < min) { console.error('node ' + process.version + ' is older than the SDK needs (' + process.argv[1] + ')'); process.exit(1); }
" "$need"

if [ -z "${APSERVER_TEST_BIN:-}" ]; then
  mkdir -p .test-bin
  (cd "$ROOT" && go build -o e2e/sdk/.test-bin/apserver ./cmd/apserver)
  export APSERVER_TEST_BIN="$PWD/.test-bin/apserver"
fi
node --test --test-concurrency=1 sdk.test.mjs
