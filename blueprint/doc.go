// Package blueprint owns the plan tree of a long specification, as pure
// functions over the document's bytes:
//
//   - Parse and Split cut the document into chunks on heading boundaries
//     within a token budget (offsets only: the document is never copied
//     per chunk);
//   - Prompt, Schema and ParsePage say what the planner is asked for one
//     chunk and validate its paged answer (at most K nodes and a
//     continuation cursor), naming what is wrong; Pages is the decision
//     core of a paged answer (which request next, one retry with a
//     stricter instruction, the cursor, the end) that its driver feeds
//     answers to;
//   - Merge turns the chunks' outlines into one strict tree (kinds nested
//     phase → epic → feature → story → task, nodes repeated across chunk
//     boundaries merged by the heading they point at, offsets aggregated,
//     reading order kept);
//   - Measure gives the share of the document's text that nodes hold and
//     maps every normative sentence;
//   - Reconcile, Diff and CarryTasks compare versions by stable id;
//   - TaskPages, BuildTasks and Rollup make a node's tasks, their
//     dependencies, and the statuses that follow them;
//   - Next picks the work that can start now, Read pages the tree, and
//     RenderPlan writes the readable projection (plan.md).
//
// Offsets are resolved here, not trusted from the model: a node names the
// heading (or line) it starts at, a task the excerpt it implements, and
// the offsets come from the document itself.
//
// blueprint has no goroutines, no I/O and no clock reads. It imports only
// protocol and the standard library.
package blueprint
