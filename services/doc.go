// Package services holds, in its sub-packages, the methods that never
// touch a thread: they live beside session, not in it, and server
// registers them (server/services.go) next to the thread methods.
//
//   - cmdexec: command/exec and its write, resize and terminate.
//   - clientinfo: what a Codex client asks at start-up that is about no
//     thread (account/read, skills/list, hooks/list, ...).
//   - configread: config/read.
//   - explain: policy/explain's answer (the decision is session's).
//   - fswatch: fs/watch and fs/unwatch.
//   - fuzzy: fuzzyFileSearch.
//   - threadsearch: thread/search and thread/search/stream (a scan of the
//     store; session only says how a thread shows on the wire).
//
// A service reads the session only through what session.Manager offers
// for it (its defaults as a port.Defaults, its config, its client) and
// gets those as plain values and functions from server: no service imports
// session (internal/layers checks it), and none imports another service.
package services
