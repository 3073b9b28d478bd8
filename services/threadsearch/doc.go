// Package threadsearch implements thread/search and thread/search/stream:
// a scan of the stored threads (their name, preview and message text) for
// a term, page by page, with snippets around the matches. It reads the
// store and asks session only how a thread shows on the wire (its live
// status). It must not import session.
package threadsearch
