// Package files owns the agent's built-in file tools (read_file, list_dir,
// search, edit_file, write_file), the confinement of every path they touch,
// and the all-or-nothing writing of the changes they propose.
//
// # Confinement
//
// A Workspace has a root (the thread's working directory), extra writable
// roots and extra readable roots, each resolved through symlinks once, when
// the Workspace is made. A path from the model, relative to the root or
// absolute, is resolved the way the kernel would walk it: lexically cleaned,
// then followed one component at a time through every symlink, including a
// final one and one whose target does not exist (creating a file through a
// dangling symlink creates its target); from the first missing component the
// rest is taken as written. Only the resolved path is used afterwards, and it
// must lie inside a readable root (ResolveRead) or a writable root
// (ResolveWrite). So ../ chains, absolute paths elsewhere, symlinks out of the
// tree and the /proc/self/root, /proc/self/cwd and /dev/fd links all resolve
// to somewhere outside and are refused with a *PathError. "~" is not
// expanded, and paths with NUL bytes or beyond PATH_MAX are refused.
//
// ResolveWrite further refuses any path with a .git or .apserver component
// (ProtectedDirs), in any letter case, before or after resolution: hooks in
// .git run code, and .apserver holds the project's config and rules, which
// must not be changed by the agent they restrict. It also refuses an existing
// file that is not
// a regular file (directory, pipe, device, socket) or that has more than one
// hard link (the other name may be outside).
//
// Between the check and the use a symlink could be swapped in. Every file the
// tools open is therefore opened from its root downwards, one directory at a
// time with openat and O_NOFOLLOW, and the file itself with O_NOFOLLOW (and
// O_NONBLOCK, after an fstatat that refuses anything but regular files and
// directories, so a pipe cannot block). A swapped-in symlink makes the open
// fail rather than be followed. Search and list_dir walk the tree the same
// way, relative to open directories, and never follow symlinks.
//
// Reading a file that has other hard links is allowed: with Linux's
// protected_hardlinks, making such a link needs read access to the file
// already, and anything running in the workspace could read it too.
//
// # Changes and Commit
//
// edit_file and write_file do not write: they return Changes (kind, path,
// old and new content, and a diff) for the session to show the user. Commit
// then writes a batch of Changes all or nothing. It first re-checks every
// path with ResolveWrite, that each file to update or delete still holds the
// content the change was made from, and that no file to add (or move to)
// exists, all before touching anything. It then writes each new content to a
// temporary file in the target's directory (creating directories as needed)
// and renames the temporary files into place, adds and moves without
// replacing anything (RENAME_NOREPLACE). If any step fails, the steps already
// taken are undone in reverse: old contents restored with their modes, added
// files and created directories removed, moves reversed. Updated files keep
// their mode (and, best effort, their owner); added files get 0644.
//
// Stamp records a file's size, modification time and SHA-256, so the session
// can tell whether a file changed since the agent last read or wrote it.
//
// A Workspace is immutable, so any goroutine may use it. files needs Linux
// (openat, renameat2). It must not import session, server, store or model.
package files
