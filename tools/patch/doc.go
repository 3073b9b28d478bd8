// Package patch owns Codex's apply_patch format: parsing a patch, applying it
// in memory, and rendering unified diffs of the result.
//
// The package is pure. It never touches the filesystem: Apply reads files
// through a function the caller supplies and returns every file's new
// contents, and the caller writes them. Path safety (absolute paths, "..",
// symlinks, the workspace root) is the caller's job too. patch must not import
// any other apserver package.
//
// # Format
//
// A patch as Codex models emit it:
//
//	*** Begin Patch
//	*** Add File: path/new.txt
//	+line1
//	+line2
//	*** Update File: path/old.go
//	*** Move to: path/renamed.go
//	@@ func foo() {
//	 context line
//	-removed
//	+added
//	 context line
//	*** End of File
//	*** Delete File: path/gone.txt
//	*** End Patch
//
// An Add File operation is followed by its lines, each prefixed with '+'. An
// Update File operation may be followed at once by a Move to line, then by
// hunks. A hunk starts with zero or more @@ lines: "@@ text" names a line to
// find before the hunk (several nest, each searched after the one before), and
// a bare "@@" only separates hunks. Then come the hunk's lines, prefixed with
// ' ' (context), '-' (removed) or '+' (added), and optionally "*** End of File",
// which anchors the hunk at the end of the file. A Delete File operation has
// no body. Paths are relative; the caller rejects unsafe ones.
//
// Hunks carry no line numbers. Each is found by searching the file for its
// context and removed lines, starting after where the previous hunk of the
// same file matched; "*** End of File" hunks are tried at the end first.
//
// # Leniency
//
// Models are sloppy, so Parse and Apply accept, as Codex does:
//
//   - blank lines around the patch, between operations and between hunks,
//     and whitespace around the Begin/End markers and operation lines;
//   - a heredoc wrapper: a first line such as "apply_patch <<'EOF'" or "<<EOF"
//     and, if present, a last line with the closing word;
//   - CRLF line endings in the patch text;
//   - blank lines inside a hunk, read as empty context lines (blank lines at
//     the end of a hunk separate it from what follows and are dropped);
//   - a first hunk without an @@ line;
//   - an @@ line in unified-diff form ("@@ -12,7 +12,8 @@ func foo() {"), whose
//     ranges are ignored and whose trailing text, if any, is the context.
//
// Lines are matched exactly first, then ignoring trailing whitespace, then
// ignoring leading and trailing whitespace, then also mapping Unicode
// punctuation to ASCII (typographic quotes, dashes and non-breaking or wide
// spaces). Each level searches every position before the next level is tried.
// An @@ context line that still isn't found may also match a file line that
// contains it. A hunk whose lines aren't found is retried without its
// trailing empty context lines, and a body may begin on its @@ line itself.
// An "*** End of File" hunk that doesn't match at the end is searched for like
// any other.
//
// # Results
//
// Apply keeps each file's newline style: lines it adds use the file's
// dominant line ending (CRLF files stay CRLF), and unchanged lines keep their
// bytes, including context lines matched only fuzzily. A file whose last line
// had no newline keeps it that way unless the patch changes or appends after
// that line; then, as in Codex, the file ends with a newline.
//
// Add File over an existing file overwrites it, as Codex does; the Result then
// carries the old contents. Anything Apply rejects means nothing is to be
// written: a missing file to update or delete, a Move to onto an existing
// file, a path changed twice in one patch, or a hunk that isn't found.
package patch
