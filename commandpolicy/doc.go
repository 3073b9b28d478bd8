// Package commandpolicy decides what happens to the agent's commands and
// file changes: run, run confined by the kernel sandbox, ask a human, or
// refuse (docs/security.md). A Judge is built from plain inputs — a
// thread's cwd, approval policy and sandbox mode, the configuration, the
// session approvals, a rules cache and a warn func — so a thread's
// commands, policy/explain and the user's own commands are judged by the
// same code. It loads the command rules (built-in, the user's file, the
// workspace's .apserver/rules, allow rules of an untrusted workspace left
// out) and probes the kernel sandbox; it runs nothing.
//
// It also reads a command for the client (its actions, the rule prefix an
// approval may propose) and renders a file change's diff.
//
// session owns the thread state the judge reads and the requests it asks
// (session/policy.go). commandpolicy must not import session or server.
package commandpolicy
