#!/usr/bin/env bash
# A user's session in a real terminal: tmux runs nvim with the plugin, the
# test types as a user would, captures the screen and checks it. It streams
# an answer, answers a command approval with one key, measures how fast
# typed keys echo while a 10,000-delta turn streams, and checks that :qa
# leaves no apserver behind.
#
#   tests/tmux.sh [APSERVER_BIN]
#   CAPTURE_OUT=FILE tests/tmux.sh    also saves the screen before (FILE.pending) and after the approval
set -euo pipefail
name="tmux" sock_name="apserver-nvim" wait_default=15
. "$(dirname "$0")/tmux_lib.sh"

cat > "$tmp/script.json" <<'JSON'
{"rules": [
  {"match": "run tests", "steps": [
    {"text": "I'll run them.", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "touch note.txt && echo 2 passed"}}]},
    {"text": "Both tests pass."}]},
  {"match": "many", "steps": [{"deltas": 10000, "delta_text": "word ", "inter_delta_us": 600}]}],
 "default": [{"text": "Hello! I am apserver, streaming this answer into your buffer.", "inter_delta_us": 20000}]}
JSON
start_model
mkdir -p "$tmp/ws" "$tmp/data"
printf 'hello world\n' > "$tmp/ws/greet.txt"
write_init '  approval_policy = "untrusted",
  width = 0.55,'

T new-session -d -s t -x 110 -y 32 "cd $tmp/ws && TERM=xterm-256color nvim -u $tmp/init.lua -i NONE -n greet.txt"
wait_for "hello world"
T send-keys -t t ":ApserverNew" Enter
wait_for "apserver · thread"
T send-keys -t t "say hello" Escape Enter
wait_for "streaming this answer into"
wait_for "── turn completed"
echo "ok    tmux: a streamed answer on the screen"

T send-keys -t t "i" "run tests" Escape Enter
wait_for "approve? [a]ccept"
[ ! -e "$tmp/ws/note.txt" ] || fail "the command ran before it was approved"
if [ -n "${CAPTURE_OUT:-}" ]; then screen > "$CAPTURE_OUT.pending"; fi
T send-keys -t t C-w k
T send-keys -t t a
wait_for "Both tests pass."
wait_for "✓ exit 0"
[ -e "$tmp/ws/note.txt" ] || fail "the approved command did not run"
screen | grep -qF "→ accept" || fail "the answer is not shown"
echo "ok    tmux: an approval answered with one key"
if [ -n "${CAPTURE_OUT:-}" ]; then screen > "$CAPTURE_OUT"; fi

# Responsiveness: the time from sending a key to seeing it on the screen,
# typed into the prompt, first idle, then while 10,000 deltas stream in
# (echo_times, stats: tmux_lib.sh).
T send-keys -t t C-w j "i" "idle-"
wait_for "idle-"
echo_times "idle-"
echo "keystroke echo, idle: $(stats) (20 keys: ${gaps[*]})"
T send-keys -t t C-u Escape
T send-keys -t t ":lua _G.deltas = 0" Enter
T send-keys -t t "i" "many words please" Escape Enter
wait_for "word word word"
T send-keys -t t "i" "busy-"
wait_for "busy-"
echo_times "busy-"
# many_done: the "many words" turn has ended. Only its own footer counts:
# an earlier turn's may still be on screen above "▶ many words please"
# (once that line has scrolled away, all that shows is this turn's).
many_done() {
  local turn
  turn=$(screen | sed -n '/▶ many words please/,$p')
  [ -n "$turn" ] || turn=$(screen)
  printf '%s\n' "$turn" | grep -qF "── turn completed"
}
many_done && fail "the turn ended before the typing did: nothing was measured under load"
max=$(printf '%s\n' "${gaps[@]}" | sort -n | tail -1)
echo "keystroke echo while 10,000 deltas stream: $(stats) (20 keys: ${gaps[*]})"
[ "$max" -lt 1000 ] || fail "a keystroke took ${max} ms to echo"
T send-keys -t t Escape
end=$((SECONDS + 60))
until many_done; do
  [ $SECONDS -lt $end ] || fail "the turn of 10,000 words never ended"
  sleep 0.05
done
T send-keys -t t ":lua vim.fn.writefile({tostring(select(2, require('apserver').current_chat():text():gsub('word ', ''))), tostring(require('apserver').state.client.pid), tostring(_G.deltas)}, '$tmp/out')" Enter
for _ in $(seq 100); do [ -s "$tmp/out" ] && break; sleep 0.05; done
words=$(sed -n 1p "$tmp/out")
pid=$(sed -n 2p "$tmp/out")
deltas=$(sed -n 3p "$tmp/out")
[ "$words" = 10000 ] || fail "the buffer holds $words of 10000 words"
echo "ok    tmux: typing stays responsive while 10,000 deltas stream (all 10000 words in the buffer, in $deltas delta notifications)"

kill -0 "$pid" || fail "apserver is not running before :qa"
T send-keys -t t ":qa!" Enter
for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "apserver (pid $pid) outlived Neovim by 3 s"
echo "ok    tmux: :qa stops apserver"
