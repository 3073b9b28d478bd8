// Package checkpoint records per-turn snapshots of a workspace so that a turn's
// file changes can be shown (Diff, Changed) and undone (Restore).
//
// # Why a separate object store
//
// Snapshots live in a bare git repository of their own,
// dataDir/checkpoints/<first 16 hex digits of sha256(absolute workspace)>.git,
// with its own index file beside it. Every git command runs with GIT_DIR,
// GIT_WORK_TREE and GIT_INDEX_FILE pointing there, so the user's repository
// (<workspace>/.git: HEAD, index, refs, objects, stash, hooks) is never read or
// written, and snapshotting works the same whether or not the workspace is a
// git repository. Snapshots are commits whose refs are
// refs/apserver/snapshots/<sequence number>; each has the previous snapshot as
// parent. When old snapshots are dropped, the oldest one kept becomes the
// store's shallow boundary, so that git gc can delete what only dropped
// snapshots used. The store's index doubles as a stat cache, so a snapshot of an
// unchanged workspace hashes nothing and returns the previous snapshot.
//
// No system or global git configuration is read, and neither are the user's
// global excludes or attributes files, so a snapshot depends only on the work
// tree. The store's info/attributes turns off every content conversion (text,
// eol, ident, filters, working-tree-encoding): blobs are the bytes on disk and
// Restore writes them back byte for byte.
//
// # What is captured
//
//   - Every regular file and symbolic link that the workspace's own .gitignore
//     files do not ignore, with its executable bit. As in git, a file stays
//     captured once captured, even if a .gitignore added later matches it.
//   - A directory replaced by a symlink or a file: its files leave the
//     snapshot and the symlink or file enters it (git itself refuses to look
//     beyond a symlink, so those paths are dropped from the index first).
//   - Files inside nested git repositories (a directory with a .git directory
//     or file below the workspace root, such as a sub-repository or submodule
//     checkout) are captured as ordinary files, not as gitlinks. Their
//     contents are first listed with the nested repository's own .gitignore
//     files; from then on the ignore rules of all enclosing directories apply.
//
// # What is not captured
//
//   - Any .git directory or file, at the root or nested, and the data
//     directory's checkpoints when it lies inside the workspace.
//   - Ignored files. The user's <workspace>/.git/info/exclude, core.excludesFile
//     and files force-added to the user's repository despite a .gitignore are
//     not consulted.
//   - Regular files larger than Options.MaxFileBytes: they are left out of the
//     snapshot, listed in Snapshot.Skipped and recorded in the snapshot, so
//     Restore never deletes them.
//   - Empty directories, special files, ownership and permission bits other
//     than the executable bit.
//
// Store serialises its operations: within a process with a semaphore, across
// processes sharing a data directory with flock(2) on a lock file in the
// store.
//
// checkpoint knows nothing of threads or turns beyond the label it is given.
// It must not import session, server, store or model.
package checkpoint
