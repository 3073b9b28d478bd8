// Package fswatch watches files and directory trees for the fs/watch
// protocol method: each watch has a client-chosen id and an absolute path,
// and changes under the path are reported, debounced, as sorted absolute
// paths (fs/changed).
//
// A directory is watched recursively, including directories created after
// the watch started; their existing contents are reported when they appear.
// A file is watched through its parent directory, so that editors' atomic
// saves (write a temporary file, rename it over) are seen. A path that does
// not exist yet is watched through its nearest existing ancestor until it
// appears. Changes inside .git directories below the watched path are never
// reported. When the kernel drops events (inotify queue overflow) the watched
// path itself is reported, telling the client to rescan.
//
// Renaming or deleting an ancestor of a watched path is noticed only when
// that ancestor is itself watched.
//
// fswatch knows nothing of threads, turns or the wire format; session
// (watch.go) maps watches onto fs/watch, fs/unwatch and fs/changed, with one
// Watcher per connection. It must not import session, server, store or
// model.
package fswatch
