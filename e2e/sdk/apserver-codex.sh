#!/usr/bin/env bash
# Stands in for the codex binary (codexPathOverride): runs apserver with the
# arguments the SDK passes and keeps a copy of what it spawned and of every
# stdout line, so the test can check each line against the SDK's types.
printf '%s\n' "$*" >> "$SDK_ARGS_LOG"
set -o pipefail
"$APSERVER_BIN" "$@" | tee -a "$SDK_EVENT_LOG"
