// Package gitwork is the git layer of runs: it gives a run a branch and a
// worktree of its own in the user's repository, prepares the worktree,
// commits each task there with trailers that identify it, diffs, brings
// a base that moved on into the branch (CatchUp, a merge commit), and
// merges the branch back into its base. It drives the git command-line
// tool.
//
// # What it guarantees
//
//   - The user's checkout and its index are never touched, with one
//     documented exception: Merge into a base branch that is checked out
//     with no uncommitted changes to tracked files fast-forwards that
//     checkout. A checkout with uncommitted changes gets ErrBaseDirty and
//     stays as it is. Commands that only read run with
//     GIT_OPTIONAL_LOCKS=0, so not even the index's stat cache is
//     refreshed.
//   - Nothing the repository configures runs: no hook
//     (core.hooksPath=/dev/null), no fsmonitor, no gpg (nothing is
//     signed), no pager, editor or credential prompt
//     (GIT_TERMINAL_PROMPT=0); output is in the C locale, and no automatic
//     gc or maintenance runs. A user without user.name or user.email gets
//     "apserver <apserver@localhost>" for the part that is missing; a
//     configured identity is used as it is (looked up once per worktree).
//     The only command of the user's that runs is Setup's.
//   - What Setup copies into a worktree (a .env, say) never reaches a
//     commit or a Diff.
//   - Every operation converges when repeated after a kill at any point:
//     AddWorktree reuses a worktree or branch that exists and clears one
//     left half-created or half-removed (a worktree is locked "apserver:
//     removing" before it is deleted, so a half-deleted one is never taken
//     for whole); Commit and Merge recognise their earlier result (by the
//     trailers, by base already containing the branch, or by the squash
//     commit's SquashTrailer) and return it; CatchUp aborts a merge left
//     half done and sees a finished one in the branch containing base; RemoveWorktree of a removed
//     worktree succeeds; Setup records that it is done.
//   - A git that a killed apserver started goes on running. The first
//     AddWorktree or Commit of a process on a worktree, and the first Merge
//     into a checked-out base, wait for such gits (found in /proc) to end;
//     then Commit removes the locks they left that belong to the worktree
//     alone (its index and HEAD, its branch) and that no process holds.
//     A stale lock on the user's branches is reported, never removed.
//     Setup kills the process group of a setup command left running.
//   - AddWorktree, RemoveWorktree and Merge may be called concurrently on
//     one repository: they take a lock of the repository (its common git
//     directory), in-process, so its worktree list is changed by one git
//     at a time.
//   - Worktrees of one repository can be used from concurrent goroutines,
//     one goroutine per worktree: commits in different worktrees use
//     different indexes and refs, and a command that meets a lock held by
//     another git is retried for up to 3 s before it fails.
//   - A failed git command is a *GitError naming the command, its
//     directory and git's trimmed standard error.
//
// A squash merge into a base that has moved on since the branch left it
// is built with git merge-tree --write-tree, or, with a git older than
// 2.38, in a temporary detached worktree. Linux only (/proc, process
// groups), like the rest of apserver's tools.
//
// gitwork uses only the standard library; it must not import session,
// server, store, model or runs: it knows nothing of what a run is.
package gitwork
