#!/usr/bin/env bash
# Regenerate Codex's app-server JSON Schema from the @openai/codex npm
# package and compare it with the copy vendored in protocol/codex/schema.
#
#   scripts/codex-schema.sh          check: every vendored file must be
#                                    byte-identical to Codex's output, and
#                                    protocol/codex/SOURCE's sha256 must match
#   scripts/codex-schema.sh update   copy Codex's output over the vendored
#                                    files (the same subset) and rewrite the sha256
#
# Needs npm (or CODEX_BIN=/path/to/codex of the right version). Codex is
# installed once into CODEX_CACHE (default ~/.cache/apserver-codex-<version>).
# `make check-generated` runs the check; `make test` does not, as it needs npm.
set -euo pipefail

CODEX_VERSION="${CODEX_VERSION:-0.171.0}"
CODEX_CACHE="${CODEX_CACHE:-$HOME/.cache/apserver-codex-$CODEX_VERSION}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENDOR="$ROOT/protocol/codex"
MODE="${1:-check}"

log() { printf 'codex-schema: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }
[[ "$MODE" == check || "$MODE" == update ]] || die "usage: $0 [check|update]"

# manifest_sha prints the sha256 that protocol/codex/SOURCE records: the
# sha256 of `sha256sum` lines for CORE.md and every file under schema/,
# sorted by path (bytes, LC_ALL=C).
manifest_sha() {
  (cd "$VENDOR" && { echo CORE.md; find schema -type f; } | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
}

find_codex() {
  local p
  for p in "$CODEX_CACHE"/node_modules/@openai/codex-*/vendor/*/bin/codex; do
    [[ -x "$p" ]] && { echo "$p"; return; }
  done
}

CODEX_BIN="${CODEX_BIN:-$(find_codex || true)}"
if [[ -z "$CODEX_BIN" ]] || ! "$CODEX_BIN" --version 2>/dev/null | grep -qF "$CODEX_VERSION"; then
  command -v npm >/dev/null || die "npm not found (install Node.js, or set CODEX_BIN)"
  log "installing @openai/codex@$CODEX_VERSION into $CODEX_CACHE"
  mkdir -p "$CODEX_CACHE"
  npm install --prefix "$CODEX_CACHE" --no-audit --no-fund "@openai/codex@$CODEX_VERSION" >&2 || die "npm install failed"
  CODEX_BIN="$(find_codex || true)"
  [[ -n "$CODEX_BIN" ]] || die "no codex binary under $CODEX_CACHE after npm install"
fi
got="$("$CODEX_BIN" --version 2>/dev/null || true)"
[[ "$got" == *"$CODEX_VERSION"* ]] || die "$CODEX_BIN is '$got', want $CODEX_VERSION"
log "using $got ($CODEX_BIN)"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# A throwaway home, so no user config changes the output.
mkdir -p "$TMP/home/.codex"
HOME="$TMP/home" CODEX_HOME="$TMP/home/.codex" \
  "$CODEX_BIN" app-server generate-json-schema --experimental --out "$TMP/out" >&2 || die "generate-json-schema failed"

# The vendored copy is a subset of the output (see schema/README.md); its
# README is ours.
same=0 differ=0 missing=0
while IFS= read -r f; do
  if [[ ! -f "$TMP/out/$f" ]]; then
    log "vendored $f is not in Codex's output"; missing=$((missing + 1))
  elif cmp -s "$TMP/out/$f" "$VENDOR/schema/$f"; then
    same=$((same + 1))
  elif [[ "$MODE" == update ]]; then
    cp "$TMP/out/$f" "$VENDOR/schema/$f"; log "updated $f"; differ=$((differ + 1))
  else
    log "differs: $f"; differ=$((differ + 1))
  fi
done < <(cd "$VENDOR/schema" && find . -type f -name '*.json' | sed 's#^\./##' | LC_ALL=C sort)
extra=$(comm -23 <(cd "$TMP/out" && find . -type f | sed 's#^\./##' | LC_ALL=C sort) \
                 <(cd "$VENDOR/schema" && find . -type f | sed 's#^\./##' | LC_ALL=C sort) | wc -l)
log "$same vendored files identical, $differ differ, $missing missing; $extra generated files are not vendored"

sha="$(manifest_sha)"
recorded="$(sed -n 's/^sha256: //p' "$VENDOR/SOURCE")"
if [[ "$MODE" == update ]]; then
  sed -i "s/^sha256: .*/sha256: $sha/" "$VENDOR/SOURCE"
  log "recorded sha256 $sha"
  exit 0
fi
[[ "$sha" == "$recorded" ]] || { log "protocol/codex/SOURCE records sha256 $recorded, the files hash to $sha"; exit 1; }
[[ $differ -eq 0 && $missing -eq 0 ]] || exit 1
log "ok: the vendored schema is Codex $CODEX_VERSION's output (sha256 $sha)"
