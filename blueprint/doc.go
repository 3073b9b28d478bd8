// Package blueprint owns the plan tree of a long specification, as pure
// functions over the document's bytes: Split cuts the document into chunks
// on heading boundaries within a token budget (offsets only, the document
// is never copied per chunk); Prompt and Schema say what the planner model
// is asked for one chunk, and ParsePage validates its paged answer (at
// most K nodes and a continuation cursor), naming what is wrong; Merge
// turns the chunks' outlines into one strict tree (kinds nested phase →
// epic → feature → story → task, duplicates across chunk boundaries merged
// by the heading they point at, offsets aggregated, reading order kept);
// Coverage measures the share of the document's text that nodes hold and
// maps every normative sentence; Reconcile and Diff compare versions by
// stable id; Next picks the work that can start now.
//
// Offsets are resolved here, not trusted from the model: a node names the
// heading (or line) it starts at, and the tree's offsets come from the
// document itself.
//
// blueprint has no goroutines, no I/O and no clock reads. It imports only
// protocol and the standard library.
package blueprint
