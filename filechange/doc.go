// Package filechange holds what needs no thread of the agent's
// file-changing tool calls (apply_patch, edit_file, write_file): a patch
// applied in memory to the workspace's files, what a fileChange item shows
// of each change, the paths an approval names, the summary the model is
// told, and the stamps that tell a file edited by someone else since the
// agent last read or wrote it.
//
// It writes no file: session proposes the changes, asks, commits them
// through tools/files and records the items (session/filechange.go). It
// must not import session or server.
package filechange
