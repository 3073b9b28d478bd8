// Package gitwork is the git layer of runs: it gives a run a branch and a
// worktree of its own in the user's repository, commits each task there
// with trailers that identify it, diffs, and merges the branch back into
// its base. It drives the git command-line tool.
//
// # What it guarantees
//
//   - The user's checkout and its index are never touched, with one
//     documented exception: Merge into a base branch that is checked out
//     with no uncommitted changes to tracked files fast-forwards that
//     checkout. A checkout with uncommitted changes gets ErrBaseDirty and
//     stays as it is. Read-only commands run with GIT_OPTIONAL_LOCKS=0, so
//     not even the index's stat cache is refreshed.
//   - No repository hook runs (core.hooksPath=/dev/null), nothing is
//     signed, no pager, editor or credential prompt starts
//     (GIT_TERMINAL_PROMPT=0), output is in the C locale, and no automatic
//     gc or maintenance runs. A user without user.name or user.email gets
//     "apserver <apserver@localhost>" for the part that is missing; a
//     configured identity is used as it is.
//   - Every operation converges when repeated after a kill at any point:
//     AddWorktree reuses a worktree or branch that exists and clears one
//     that git left half-created; Commit and Merge recognise their own
//     earlier result (by the trailers, by the base already containing the
//     branch, or by the squash commit's SquashTrailer) and return it;
//     RemoveWorktree of a removed worktree succeeds; Setup records that it
//     is done.
//   - Worktrees of one repository can be used from concurrent goroutines:
//     commits in different worktrees use different indexes and refs, and a
//     command that meets a lock held by another git process is retried
//     briefly before it fails.
//   - A failed git command is a *GitError naming the command, its
//     directory and git's trimmed standard error.
//
// A squash merge into a base that has moved on since the branch left it
// is built with git merge-tree --write-tree, or, with a git older than
// 2.38, in a temporary detached worktree.
//
// gitwork uses only the standard library; it must not import session,
// server, store, model or runs: it knows nothing of what a run is.
package gitwork
