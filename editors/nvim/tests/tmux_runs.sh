#!/usr/bin/env bash
# Runs and blueprints in a real terminal: tmux runs nvim with the plugin and
# the test types as a user would. It starts a run from a visual selection,
# edits the plan in its buffer (:w sends it), approves it and watches the
# tasks complete while it measures how fast typed keys echo as the task
# thread streams, answers a planner's question, then ingests a small
# specification, looks at the tree, makes a node's tasks and starts its
# phase with `s` (the manager, full_auto), and watches the project buffer
# as the manager's run completes.
#
#   tests/tmux_runs.sh [APSERVER_BIN]
#   CAPTURE_OUT=FILE tests/tmux_runs.sh   also saves the screen with the tree
#                                         and the project buffer at the end
set -euo pipefail
name="tmux runs" sock_name="apserver-nvim-runs" wait_default=20
. "$(dirname "$0")/tmux_lib.sh"

# n1's implementer streams 4,000 deltas (about 4 s) before it is done: the
# typing is measured meanwhile
ticks=$(printf 'tick %.0s' $(seq 2000))
task() { # task ID TITLE DEPS RISK FILE
  printf '{"id":"%s","title":"%s","description":"Write %s.","kind":"file_create","dependencies":[%s],"risk":"%s","acceptance":{"criteria":["%s exists"],"checks":[],"files":["%s"]},"estimate":"1m"}' "$1" "$2" "$5" "$3" "$4" "$5" "$5"
}
plan() { # plan SUMMARY TASK...
  local s=$1; shift
  local IFS=,
  printf '{"summary":"%s","tasks":[%s],"clarification":null}' "$s" "$*"
}
json() { sed 's/\\/\\\\/g; s/"/\\"/g'; }
two=$(plan "two files" "$(task n1 "N1-task write one.txt" "" low one.txt)" "$(task n2 "N2-task write two.txt" '"n1"' medium two.txt)" | json)
one=$(plan "blue it is" "$(task n1 "N1-task write one.txt" "" low one.txt)" | json)
ask=$(printf '{"summary":"","tasks":[],"clarification":{"question":"Which colour?","context":"the greeting","options":["red","blue"]}}' | json)
outline=$(printf '{"nodes":[%s,%s,%s,%s],"next":""}' \
  '{"kind":"phase","heading":"Phase 1: Greetings","title":"Greetings","summary":"","priority":"","risk":"","estimate":"","dependsOn":[]}' \
  '{"kind":"epic","heading":"Epic: Say hello","title":"Say hello","summary":"","priority":"","risk":"","estimate":"","dependsOn":[]}' \
  '{"kind":"task","heading":"Task: Print hello","title":"Print hello","summary":"","priority":"high","risk":"","estimate":"S","dependsOn":[]}' \
  '{"kind":"task","heading":"Task: Print bye","title":"Print bye","summary":"","priority":"","risk":"","estimate":"S","dependsOn":[]}' | json)
node_tasks=$(printf '{"tasks":[%s],"next":""}' \
  '{"title":"Write hello.sh","kind":"file_create","criteria":["it prints hello"],"checks":["test -f hello.sh"],"files":["hello.sh"],"dependsOn":[],"estimate":"S","risk":"low","excerpt":"The tool MUST print hello."}' | json)
cat > "$tmp/script.json" <<JSON
{"rules": [
  {"match": "Review task", "steps": [{"text": "{\"pass\":true,\"findings\":\"fine\"}"}]},
  {"match": "The user answered: blue", "steps": [{"text": "$one"}]},
  {"match": "small tasks: ask first", "steps": [{"text": "$ask"}]},
  {"match": "Plan this request", "steps": [{"text": "$two"}]},
  {"match": "N1-task", "steps": [
    {"text": "Working.", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "echo one > one.txt"}}]},
    {"text": "${ticks}The task is complete.", "deltas": 4000, "inter_delta_us": 1000}]},
  {"match": "N2-task", "steps": [
    {"text": "Working.", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "echo two > two.txt"}}]},
    {"text": "The task is complete."}]},
  {"match": "[blueprint chunk 1/1", "steps": [{"text": "$outline"}]},
  {"match": "[blueprint tasks", "steps": [{"text": "$node_tasks"}]},
  {"match": "Write hello.sh", "steps": [
    {"text": "Writing.", "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "echo 'echo hello' > hello.sh"}}]},
    {"text": "The task is complete."}]}],
 "default": [{"text": "hello"}]}
JSON
start_model
mkdir -p "$tmp/ws" "$tmp/data"
printf '%s\n' "notes" "write two files" "into the workspace" "end" > "$tmp/ws/request.txt"
printf '%s\n' "# Phase 1: Greetings" "" "## Epic: Say hello" "" "### Task: Print hello" "" "The tool MUST print hello." "" "### Task: Print bye" "" "The tool prints bye." > "$tmp/ws/spec.md"
(cd "$tmp/ws" && git init -q -b main && git -c user.name=T -c user.email=t@example.com add -A && git -c user.name=T -c user.email=t@example.com commit -q -m first)
write_init "  blueprint_paths_file = \"$tmp/paths.json\","

T new-session -d -s t -x 200 -y 40 "cd $tmp/ws && TERM=xterm-256color nvim -u $tmp/init.lua -i NONE -n request.txt"
wait_for "write two files"
# the selection: lines 2-3
T send-keys -t t "2G" "V" "j" ":ApserverRun" Enter
wait_for "waiting for plan approval" 30
wait_for "○ n2  N2-task write two.txt  [risk medium]  after n1  pending"
echo "ok    tmux runs: a run started from a selection shows its plan"

T send-keys -t t "e"
wait_for "title: N2-task write two.txt"
T send-keys -t t ":%s/write two.txt/write two.txt, edited/" Enter
T send-keys -t t ":w" Enter
wait_for "── plan v2 · not approved ──"
wait_for "N2-task write two.txt, edited  [risk medium]"
T send-keys -t t ":close" Enter
echo "ok    tmux runs: the plan edited in its buffer and written with :w"

# the same typing with nothing streaming, for comparison
T send-keys -t t C-w h "G" "o" "idle-"
wait_for "idle-"
echo_times "idle-"
echo "keystroke echo, idle: $(stats) (20 keys: ${gaps[*]})"
T send-keys -t t Escape C-w l
T send-keys -t t "a"
wait_for "▶ n1"
# type into request.txt while n1's thread streams
T send-keys -t t C-w h "G" "o" "busy-"
wait_for "busy-"
T send-keys -t t Escape ":lua _G.deltas = 0" Enter "A"
echo_times "busy-"
T send-keys -t t Escape
T send-keys -t t ":lua vim.fn.writefile({tostring(_G.deltas)}, '$tmp/deltas')" Enter
for _ in $(seq 100); do [ -s "$tmp/deltas" ] && break; sleep 0.05; done
during=$(cat "$tmp/deltas")
[ "$during" -gt 0 ] || fail "no delta streamed while typing: nothing was measured under load"
screen | grep -qF "▶ n1" || fail "n1 ended before the typing did: nothing was measured under load"
max=$(printf '%s\n' "${gaps[@]}" | sort -n | tail -1)
echo "keystroke echo while a run's task streams ($during deltas meanwhile): $(stats) (20 keys: ${gaps[*]})"
# The 50 ms target is a benchmark figure (docs/benchmarks.md), printed
# above: on a machine busy with other suites it says nothing about the
# plugin. Only a keystroke that hangs fails the test.
[ "$max" -lt 1000 ] || fail "a keystroke took ${max} ms to echo"
wait_for "✓ n2" 60
wait_for "· completed" 30
wait_for "tasks: 2/2 completed"
echo "ok    tmux runs: approved, the tasks completed"

T send-keys -t t ":ApserverRun ask first about colours" Enter
wait_for "? Which colour?" 30
T send-keys -t t "c"
wait_for "2: blue"
T send-keys -t t "2" Enter
wait_for "blue it is" 30
echo "ok    tmux runs: the planner's question answered"

T send-keys -t t ":ApserverIngest spec.md" Enter
wait_for "ready: 4 nodes" 30
T send-keys -t t ":ApserverBlueprint" Enter
wait_for "○ phase  Greetings  0/2" 30
wait_for "    ○ task  Print bye  0/1"
T send-keys -t t "/Print bye" Enter Enter
wait_for "The tool prints bye."
echo "ok    tmux runs: a blueprint ingested, its tree shown, <CR> to the source"

# the tree again: the tasks of a node, then its phase started with `s`
T send-keys -t t ":ApserverBlueprint" Enter
wait_for "keys: <CR> source  t tasks  s start building"
T send-keys -t t "/Print hello" Enter "t"
wait_for "• Write hello.sh  [planned]" 30
T send-keys -t t "gg" "/phase  Greetings" Enter "s"
wait_for '2: the manager builds phase "Greetings" in mode full_auto' 10
T send-keys -t t "2" Enter
wait_for "manager: started_run" 30
wait_for "manager full_auto:"
echo "ok    tmux runs: a phase started from the tree (s), the manager started a run"

# the project: under full_auto the next tick approves the run's plan (T
# ticks now rather than waiting for the heartbeat); its task completes
T send-keys -t t ":ApserverProject" Enter
wait_for "mode full_auto" 10
wait_for "last tick "
T send-keys -t t "T"
wait_for "runs: completed 1" 90
wait_for "tasks: done 1"
if [ -n "${CAPTURE_OUT:-}" ]; then screen > "$CAPTURE_OUT"; fi
echo "ok    tmux runs: the project buffer shows the manager's run completed"
