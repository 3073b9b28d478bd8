#!/usr/bin/env bash
# Builds the linux-x64 .vsix: the production bundle plus the linux-x64
# apserver binary under bin/ (built here with go build from the repository
# root), packed with @vscode/vsce 3 --target linux-x64.
#
#   editors/vscode/package.sh [OUT.vsix]
set -euo pipefail
cd "$(dirname "$0")"
EXT_DIR=$PWD
ROOT=$(cd ../.. && pwd)
export PATH="$PATH:/usr/local/go/bin"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "package.sh: apserver uses cgo (SQLite), so build the linux-x64 package on a linux-x64 machine" >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

VERSION=$(node -p 'require("./package.json").version')
OUT=${1:-"$EXT_DIR/apserver-vscode-linux-x64-$VERSION.vsix"}
SERVER_VERSION=$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo dev)

echo "== apserver $SERVER_VERSION for linux-x64"
mkdir -p bin
(cd "$ROOT" && CGO_ENABLED=1 GOOS=linux GOARCH=amd64 go build -trimpath \
  -ldflags "-s -w -X main.version=$SERVER_VERSION" -o "$EXT_DIR/bin/apserver" ./cmd/apserver)
bin/apserver version

echo "== vsce package (runs vscode:prepublish: the production bundle)"
npx --no-install vsce package --target linux-x64 --no-dependencies --skip-license \
  --allow-missing-repository --no-rewrite-relative-links --out "$OUT"

# The package must hold the bundle, the webview and the server.
if command -v unzip >/dev/null; then listing=$(unzip -l "$OUT")
elif command -v python3 >/dev/null; then listing=$(python3 -m zipfile -l "$OUT" | awk '{print "  " $1}')
else echo "built $OUT (not checked: no unzip or python3)"; exit 0; fi
for f in extension/package.json extension/dist/extension.js extension/dist/webview.js extension/dist/mermaid.js \
         extension/dist/webview.css extension/media/apserver.svg extension/bin/apserver; do
  grep -q " $f\$" <<<"$listing" || { echo "package.sh: $f is missing from $OUT" >&2; exit 1; }
done
if grep -q 'node_modules/' <<<"$listing"; then echo "package.sh: node_modules leaked into $OUT" >&2; exit 1; fi
echo "built $OUT ($(du -h "$OUT" | cut -f1))"
