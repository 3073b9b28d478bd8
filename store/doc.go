// Package store owns apserver's one SQLite file: its schema migrations, the
// threads, turns and items tables, the append-only per-thread event log with
// gapless sequence numbers, and a small key/value table for durable state of
// other packages.
//
// The file is opened in WAL mode. All writes go through a single connection
// guarded by a mutex, each in one transaction, so the per-thread sequence
// numbers (turn, item and event seq) are MAX(seq)+1 computed inside the same
// write transaction and therefore gapless. Reads use a separate pool and run
// concurrently with the writer. A write method returns only after its
// transaction is committed; with synchronous=NORMAL (the default) a commit
// survives a crash or kill -9 of the process, with synchronous=FULL it also
// survives a power cut. WAL checkpoints run on a background goroutine, not
// inside a commit.
//
// A context compaction is a tombstone (compaction.go): a row naming the
// item it happened at and the history standing in for the items before
// it, plus a "thread.compacted" event; no item is deleted for it.
// PromptSource reads what the next prompt is built from: the latest
// compaction and the items after it, never the whole thread.
//
// An item's wire JSON or history of 4 MiB or more is kept out of its row,
// in a side file under items/ beside the database file, the row holding a
// marker; every read gives the file back in its place (sidefile.go).
//
// Items, turn errors, history records, settings, event payloads and state
// values are opaque JSON to this package.
//
// Import rules: store is the only package of apserver that imports
// github.com/mattn/go-sqlite3, and it must not import any other package of
// this repository (in particular not session, server or protocol).
package store
