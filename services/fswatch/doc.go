// Package fswatch implements fs/watch and fs/unwatch: one recursive,
// debounced watcher (tools/fswatch) made on first use, whose changes go to
// the client as fs/changed. Watch ids are the client's (behind a hub,
// scoped to its connection by server). It must not import session.
package fswatch
