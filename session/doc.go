// Package session owns all conversation state: threads, turns, items and
// the agent loop that drives a model and runs its tool calls.
//
// One goroutine owns each thread (thread.run); nothing else reads or writes
// a thread's fields. Requests from the server, and the results of child
// goroutines (command runs, approval waits, checkpoints, store reads), reach
// it as closures on its inbox; model stream events reach it through a queue
// (events.go) that wakes it once per burst. Model events carry the turn and
// the sampling generation they belong to, and other results check the turn
// they were started for, so whatever arrives after an interrupt or a steer
// is dropped. Slow work (git, commands, loading a thread from the store) runs
// on the child goroutines, never on the thread's.
//
// Context compaction (compact.go) runs inside turns: before a model
// request that would pass the trigger, and for thread/compact/start. What
// it does is planned by the pure package compaction; the summary request
// runs on a child goroutine; the thread installs the compacted history,
// stores the tombstone and applies the guards. A full-auto handoff to a
// fresh thread is compact_handoff.go.
//
// Full auto's decisions belong to package fullauto, a pure state machine
// that the thread goroutine drives: it feeds events and applies the
// effects (fullauto.go). The Manager owns what spans threads: the
// model-call scheduler (internal/modelsched) and the clock (clock.go).
// Full auto's effects carrier is package autodrive (autodrive.Drive); the
// thread is its autodrive.Thread (autoThread, fullauto.go).
//
// Beyond the agent's turns: thread/delete, thread/metadata/update,
// thread/settings/update (threadops.go); the judgment of the user's own
// commands (Manager.UserCommandPlan: the same rules and sandbox, never
// asked) and of policy/explain's questions (policyjudgment.go);
// review/start and plan mode, read-only turns (review.go, planmode.go);
// image inputs (images.go).
//
// The layers above session (runner; next blueprints, the manager,
// workers) drive threads through the typed thread port it offers
// (Manager.Threads, threads.go; the interface is package session/port),
// never as a wire client. A panic on a thread goroutine, or in a turn's
// model stream or command goroutine, fails that turn and nothing else
// (panics.go).
//
// The methods that never touch a thread (command/exec, fs/watch, fuzzy
// search, config/read, client info, thread search, policy/explain's
// answer) live beside session in package services, registered by server;
// session offers them its defaults, config, client and hooks (host.go).
//
// The command judge (rules, sandbox, approval policy) is package
// commandpolicy's; policy.go builds it from a thread. What a file change
// is, without a thread (a patch applied in memory, its diffs, stale files),
// is package filechange's.
// The MCP tools' listing, session approvals and elicitation routing are
// package mcpservers'; the saved tool outputs read_output pages through
// are tooloutput/saved's.
//
// session declares what it consumes: the editor (Client), the model
// (via model.Client, configured from config), the store and the tools. It
// must not import server or any JSON-RPC package.
//
// A turn's parts that need no thread are leaves session calls:
// the TurnError of what ended a turn, an item's stored JSON, reasoning
// joined from its parts and the request's service tier are turnwire's.
// The thread port's outcome streams are package outcomes (threads.go publishes).
// Paging of the thread lists and thread/list's store options are threadwire's,
// and so are a thread's settings: stored, overridden by thread/start, resume,
// fork, turn/start and thread/settings/update.
// Opening each workspace's snapshot store once, a turn's checkpoint record and
// revert's plan and refusal are tools/checkpoint's (turns.go).
// Context windows, learned or configured, the history as compaction reads
// it, the summary request and the compacted history are contextwindow's.
// The hooks' interfaces (Aligner, ProjectContexter, Summarizer, IntentRouter)
// are session/port's (hooks.go); an alignment's approval reason is brain's,
// record_decision's tool and arguments agenttools', the intent confirmation's
// question and answer manager's.
// The queue of model events to the thread and the merging of deltas are modelstream's.
package session
