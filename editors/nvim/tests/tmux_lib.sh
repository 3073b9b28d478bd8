# tmux_lib.sh: what the terminal tests (tmux.sh, tmux_runs.sh) share.
# Source it after setting `name` (for messages) and `sock_name` (the tmux
# socket's prefix); it resolves the apserver binary (the script's first
# argument, else APSERVER_TEST_BIN, else the module's bin/apserver), makes
# `tmp` (removed on exit with the tmux server and the fake model) and
# defines the helpers below.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-${APSERVER_TEST_BIN:-$here/../../bin/apserver}}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
tmp=$(mktemp -d)
sock="$sock_name-$$"
model_pid=""
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL  $name: $*"
  echo "---- screen ----"
  tmux -L "$sock" capture-pane -p -t t 2>/dev/null || true
  exit 1
}

# start_model: the fake model on $tmp/script.json; its URL in $tmp/url.
start_model() {
  "$bin" fake-model --script "$tmp/script.json" > "$tmp/url" 2>"$tmp/model.err" < /dev/null &
  model_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/url" ] && break; sleep 0.1; done
  [ -s "$tmp/url" ] || { cat "$tmp/model.err"; fail "the fake model printed no URL"; }
}

# write_init OPTIONS: $tmp/init.lua, the plugin set up against the fake
# model with the data dir and workspace in $tmp, plus OPTIONS (lines of
# Lua table fields); it counts agent message deltas in _G.deltas.
write_init() {
  cat > "$tmp/init.lua" <<LUA
vim.opt.runtimepath:prepend("$here")
vim.o.laststatus = 2
vim.o.statusline = "%f %= %{v:lua.require'apserver'.statusline()} "
require("apserver").setup({
  cmd = "$bin",
  extra_args = { "--data-dir", "$tmp/data", "--base-url", "$(cat "$tmp/url")", "--model", "scripted" },
  env = { OPENAI_API_KEY = "test-key" },
  cwd = "$tmp/ws",
$1
})
_G.deltas = 0
require("apserver").on_notification_hook = function(m)
  if m == "item/agentMessage/delta" then _G.deltas = _G.deltas + 1 end
end
LUA
}

T() { tmux -L "$sock" "$@"; }
screen() { T capture-pane -p -t t; }
# wait_for TEXT [SECONDS]: until the screen shows TEXT (default: $wait_default s)
wait_for() {
  local end=$((SECONDS + ${2:-$wait_default}))
  while [ $SECONDS -lt $end ]; do
    screen | grep -qF -- "$1" && return 0
    sleep 0.05
  done
  fail "the screen never showed: $1"
}
# the polling above is the only way to watch a terminal from outside

# Responsiveness: echo_times PREFIX types a..t after PREFIX, one key at a
# time, and sets gaps to the milliseconds from sending each key to seeing
# it on the screen; stats summarises them.
echo_times() {
  local typed=$1 t0 t1
  gaps=()
  for c in a b c d e f g h i j k l m n o p q r s t; do
    typed="$typed$c"
    t0=$(date +%s%N)
    T send-keys -t t -l "$c"
    while ! screen | grep -qF -- "$typed"; do :; done
    t1=$(date +%s%N)
    gaps+=($(( (t1 - t0) / 1000000 )))
  done
}
stats() { printf '%s\n' "${gaps[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms, max %d ms", a[int((NR+1)/2)], a[NR]}'; }
