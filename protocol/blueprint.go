package protocol

// Blueprint methods and notifications (apserver's extension,
// docs/blueprints.md): their constants, MethodBlueprintIngest …
// NotifyBlueprintUpdated, are generated into methods_gen.go from
// protocol/apserver/schema. A blueprint is a long specification ingested
// into a plan tree (phase → epic → feature → story → task spec).

// NodeKind is a plan node's level. Kinds are ordered: a node's parent is
// always of a smaller kind (a story never sits above a feature).
type NodeKind string

// Node kinds, outermost first.
const (
	KindPhase   NodeKind = "phase"
	KindEpic    NodeKind = "epic"
	KindFeature NodeKind = "feature"
	KindStory   NodeKind = "story"
	KindTask    NodeKind = "task" // a task spec: work the document asks for
)

// Level is the kind's depth (phase 0 … task 4), -1 for an unknown kind.
func (k NodeKind) Level() int {
	switch k {
	case KindPhase:
		return 0
	case KindEpic:
		return 1
	case KindFeature:
		return 2
	case KindStory:
		return 3
	case KindTask:
		return 4
	}
	return -1
}

// NodeStatus is a plan node's status.
type NodeStatus string

// Node statuses.
const (
	NodePlanned    NodeStatus = "planned"
	NodeInProgress NodeStatus = "in_progress"
	NodeBlocked    NodeStatus = "blocked"
	NodeDone       NodeStatus = "done"
)

// Valid reports whether s is one of the statuses.
func (s NodeStatus) Valid() bool {
	return s == NodePlanned || s == NodeInProgress || s == NodeBlocked || s == NodeDone
}

// NodeRisk is a node's risk; "" is unknown.
type NodeRisk string

// Risks.
const (
	NodeRiskLow    NodeRisk = "low"
	NodeRiskMedium NodeRisk = "medium"
	NodeRiskHigh   NodeRisk = "high"
)

// Valid reports whether r is a risk or empty.
func (r NodeRisk) Valid() bool {
	return r == "" || r == NodeRiskLow || r == NodeRiskMedium || r == NodeRiskHigh
}

// NodePriority is a node's priority; "" is unset (ranked as medium).
type NodePriority string

// Priorities, most urgent first.
const (
	PriorityCritical NodePriority = "critical"
	PriorityHigh     NodePriority = "high"
	PriorityMedium   NodePriority = "medium"
	PriorityLow      NodePriority = "low"
)

// Rank orders priorities: 0 for critical … 3 for low; unset ranks as
// medium; -1 for an unknown value.
func (p NodePriority) Rank() int {
	switch p {
	case PriorityCritical:
		return 0
	case PriorityHigh:
		return 1
	case PriorityMedium, "":
		return 2
	case PriorityLow:
		return 3
	}
	return -1
}

// Estimate is a T-shirt size, XS to XL; "" is unset (ranked as M).
type Estimate string

// Rank orders sizes: 0 for XS … 4 for XL; unset ranks as M; -1 for an
// unknown value.
func (e Estimate) Rank() int {
	switch e {
	case "XS":
		return 0
	case "S":
		return 1
	case "M", "":
		return 2
	case "L":
		return 3
	case "XL":
		return 4
	}
	return -1
}

// BlueprintNode is one node of a plan tree. Offsets are byte offsets into
// the version's document: [Start, End) spans the node's heading, its text
// and its descendants; [Start, SectionEnd) is its own text (up to the next
// heading), what coverage counts.
type BlueprintNode struct {
	ID       string   `json:"id"`
	ParentID string   `json:"parentId,omitempty"`
	Kind     NodeKind `json:"kind"`
	Title    string   `json:"title"`
	Summary  string   `json:"summary,omitempty"`
	Anchor   []string `json:"anchor"`
	Start    int      `json:"start"`
	End      int      `json:"end"`
	// SectionEnd ends the node's own text.
	SectionEnd int          `json:"sectionEnd"`
	Order      int          `json:"order"`
	Depth      int          `json:"depth"`
	Status     NodeStatus   `json:"status"`
	Priority   NodePriority `json:"priority,omitempty"`
	Risk       NodeRisk     `json:"risk,omitempty"`
	Estimate   Estimate     `json:"estimate,omitempty"`
	// DependsOn holds the ids of the nodes this one waits for.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Unresolved holds the dependencies the planner named that match no
	// node: kept and shown, never dropped.
	Unresolved []string `json:"unresolved,omitempty"`
	// Hash is the hash of the node's own text: a node whose hash changes
	// between versions is modified.
	Hash string `json:"hash"`
}

// BlueprintIngestParams starts an ingestion: Path (relative to Cwd) or Text.
// Blueprint, when set, makes the document a new version of that blueprint.
type BlueprintIngestParams struct {
	Cwd         string `json:"cwd,omitempty"`
	Path        string `json:"path,omitempty"`
	Text        string `json:"text,omitempty"`
	Title       string `json:"title,omitempty"`
	BlueprintID string `json:"blueprintId,omitempty"`
	// ChunkTokens overrides the chunk budget (default 12000 tokens).
	ChunkTokens int `json:"chunkTokens,omitempty"`
}

// BlueprintJobStatus is an ingestion's status.
type BlueprintJobStatus string

// Ingestion statuses; ready, failed and cancelled are final.
const (
	JobIngesting BlueprintJobStatus = "ingesting"
	JobReady     BlueprintJobStatus = "ready"
	JobFailed    BlueprintJobStatus = "failed"
	JobCancelled BlueprintJobStatus = "cancelled"
)

// BlueprintVersion is one ingested document of a blueprint.
type BlueprintVersion struct {
	ID          string             `json:"id"`
	BlueprintID string             `json:"blueprintId"`
	Number      int                `json:"number"`
	ParentID    string             `json:"parentId,omitempty"`
	ReplacedBy  string             `json:"replacedBy,omitempty"`
	Status      BlueprintJobStatus `json:"status"`
	Error       string             `json:"error,omitempty"`
	Bytes       int                `json:"bytes"`
	ChunksTotal int                `json:"chunksTotal"`
	ChunksDone  int                `json:"chunksDone"`
	Nodes       int                `json:"nodes"`
	CreatedAt   int64              `json:"createdAt"`
}

// Blueprint is a blueprint and its primary (newest ready or in-flight)
// version.
type Blueprint struct {
	ID      string           `json:"id"`
	Cwd     string           `json:"cwd"`
	Title   string           `json:"title"`
	Primary BlueprintVersion `json:"primary"`
}

// BlueprintIngestResult answers blueprint/ingest at once with the new
// Version (status ingesting); the job goes on and reports with
// blueprint/progress. The blueprint's primary version changes when the new
// one is ready.
type BlueprintIngestResult struct {
	Blueprint Blueprint        `json:"blueprint"`
	Version   BlueprintVersion `json:"version"`
}

// BlueprintProgressNotification: chunks done of total, nodes so far.
type BlueprintProgressNotification struct {
	BlueprintID string             `json:"blueprintId"`
	VersionID   string             `json:"versionId"`
	Status      BlueprintJobStatus `json:"status"`
	ChunksDone  int                `json:"chunksDone"`
	ChunksTotal int                `json:"chunksTotal"`
	Nodes       int                `json:"nodes"`
	Error       string             `json:"error,omitempty"`
}

// BlueprintListParams filters by Cwd when set.
type BlueprintListParams struct {
	Cwd string `json:"cwd,omitempty"`
}

// BlueprintListResult lists blueprints, newest first.
type BlueprintListResult struct {
	Data []Blueprint `json:"data"`
}

// BlueprintReadParams reads a version's tree (the primary version when
// VersionID is empty) in reading order, from the node NodeID (the whole
// tree when empty), down to Depth levels below it (0: no limit), a page of
// Limit nodes (default 200, at most 1000) from Cursor.
type BlueprintReadParams struct {
	BlueprintID string `json:"blueprintId"`
	VersionID   string `json:"versionId,omitempty"`
	NodeID      string `json:"nodeId,omitempty"`
	Depth       int    `json:"depth,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// BlueprintReadResult is a page of the tree; NextCursor is empty on the
// last page.
type BlueprintReadResult struct {
	Blueprint  Blueprint       `json:"blueprint"`
	Nodes      []BlueprintNode `json:"nodes"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// BlueprintNodeUpdateParams is a human's edit of a node of the primary
// version; nil fields are left alone. DependsOn replaces the dependencies
// (node ids); a cycle is refused.
type BlueprintNodeUpdateParams struct {
	BlueprintID string        `json:"blueprintId"`
	NodeID      string        `json:"nodeId"`
	Title       *string       `json:"title,omitempty"`
	Summary     *string       `json:"summary,omitempty"`
	Priority    *NodePriority `json:"priority,omitempty"`
	Status      *NodeStatus   `json:"status,omitempty"`
	DependsOn   *[]string     `json:"dependsOn,omitempty"`
}

// BlueprintNodeUpdateResult is the node as stored.
type BlueprintNodeUpdateResult struct {
	Node BlueprintNode `json:"node"`
}

// BlueprintUpdatedNotification: a node changed (a human's edit).
type BlueprintUpdatedNotification struct {
	BlueprintID string        `json:"blueprintId"`
	VersionID   string        `json:"versionId"`
	Node        BlueprintNode `json:"node"`
}

// BlueprintNextParams asks for the next work of a blueprint's primary
// version: Phase (a node id or title; the first unfinished phase when
// empty), a page of Limit (default 20) from Cursor.
type BlueprintNextParams struct {
	BlueprintID string `json:"blueprintId"`
	Phase       string `json:"phase,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// NextTask is a task ready to start: every dependency is done. Chain is
// the length of the longest chain of unfinished tasks that wait for it.
type NextTask struct {
	Node  BlueprintNode `json:"node"`
	Chain int           `json:"chain"`
	// InProgressNode: the task or one of its ancestors is in progress.
	InProgressNode bool `json:"inProgressNode"`
}

// BlueprintNextResult is a page of ready tasks, best first.
type BlueprintNextResult struct {
	Phase      string     `json:"phase,omitempty"`
	Data       []NextTask `json:"data"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// BlueprintCoverageParams: coverage of a version (primary when empty). The
// normative sentences are paged: Limit (default 100) from Cursor.
type BlueprintCoverageParams struct {
	BlueprintID string `json:"blueprintId"`
	VersionID   string `json:"versionId,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// NormativeSentence is a sentence with MUST, SHALL, must or required, and
// the node whose text holds it ("" when none does).
type NormativeSentence struct {
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Text   string `json:"text"`
	NodeID string `json:"nodeId,omitempty"`
}

// BlueprintCoverageResult: Covered of Total non-boilerplate bytes lie in a
// node's own text; Gaps are the uncovered ranges (at most 100, the first
// ones); Uncovered lists every normative sentence no node holds; Normative
// is a page of all of them.
type BlueprintCoverageResult struct {
	TotalBytes      int                 `json:"totalBytes"`
	CoveredBytes    int                 `json:"coveredBytes"`
	Ratio           float64             `json:"ratio"`
	Gaps            []ByteRange         `json:"gaps"`
	NormativeTotal  int                 `json:"normativeTotal"`
	NormativeMapped int                 `json:"normativeMapped"`
	Uncovered       []NormativeSentence `json:"uncovered"`
	Normative       []NormativeSentence `json:"normative"`
	NextCursor      string              `json:"nextCursor,omitempty"`
}

// BlueprintDiffParams compares two versions: From (the To version's parent
// when empty) and To (the primary when empty).
type BlueprintDiffParams struct {
	BlueprintID string `json:"blueprintId"`
	From        string `json:"from,omitempty"`
	To          string `json:"to,omitempty"`
}

// NodeChange is one node of a diff; Before is set for modified and moved.
type NodeChange struct {
	ID     string         `json:"id"`
	Kind   NodeKind       `json:"kind"`
	Title  string         `json:"title"`
	Anchor []string       `json:"anchor"`
	Before *BlueprintNode `json:"before,omitempty"`
}

// BlueprintDiffResult: the nodes added, modified (own text changed),
// removed and moved (same text, other place) between two versions. The
// tasks under modified and removed nodes are to be reviewed.
type BlueprintDiffResult struct {
	From     string       `json:"from"`
	To       string       `json:"to"`
	Added    []NodeChange `json:"added"`
	Modified []NodeChange `json:"modified"`
	Removed  []NodeChange `json:"removed"`
	Moved    []NodeChange `json:"moved"`
	// Review lists the tasks of the From version under modified or
	// removed nodes: flagged, never silently kept.
	Review []BlueprintTask `json:"review"`
}

// BlueprintCancelParams cancels an ingestion in flight.
type BlueprintCancelParams struct {
	BlueprintID string `json:"blueprintId"`
}

// BlueprintCancelResult is empty.
type BlueprintCancelResult struct{}

// BlueprintNodeTasksParams asks for the tasks that implement a node of the
// primary version. The tasks made before are returned unless Regenerate.
type BlueprintNodeTasksParams struct {
	BlueprintID string `json:"blueprintId"`
	NodeID      string `json:"nodeId"`
	Regenerate  bool   `json:"regenerate,omitempty"`
}

// BlueprintTask is a task that implements (part of) a node. Excerpt is the
// source text it implements, found in the node's text. Acceptance has the
// shape of a run's task (run.go), so that a run can take it.
type BlueprintTask struct {
	ID         string         `json:"id"`
	NodeID     string         `json:"nodeId"`
	Title      string         `json:"title"`
	Kind       string         `json:"kind"`
	Acceptance TaskAcceptance `json:"acceptance"`
	// DependsOn holds task (or node) ids; Unresolved the names the planner
	// gave that match nothing, kept and shown.
	DependsOn   []string   `json:"dependsOn,omitempty"`
	Unresolved  []string   `json:"unresolved,omitempty"`
	Estimate    Estimate   `json:"estimate,omitempty"`
	Risk        NodeRisk   `json:"risk,omitempty"`
	Excerpt     ByteRange  `json:"excerpt"`
	ExcerptText string     `json:"excerptText"`
	Status      NodeStatus `json:"status"`
	Order       int        `json:"order"`
	// Review: carried into a new version whose text of the node changed
	// (or where the excerpt is no longer found): to be looked at again.
	Review bool `json:"review,omitempty"`
	// Evidence: the run and commit that made the task done (set only by a
	// run's validated commit; runblueprint.go).
	Evidence *TaskEvidence `json:"evidence,omitempty"`
}

// BlueprintNodeTasksResult is the node and its tasks, in order.
type BlueprintNodeTasksResult struct {
	Node  BlueprintNode   `json:"node"`
	Tasks []BlueprintTask `json:"tasks"`
}

// BlueprintVerifyParams re-runs the acceptance of the done tasks of a node
// (its subtree; or one task) in the blueprint's cwd, in the sandbox.
type BlueprintVerifyParams struct {
	BlueprintID string `json:"blueprintId"`
	NodeID      string `json:"nodeId"`
}

// CheckResult is one acceptance check run: its exit code (-1: killed or
// timed out) and the tail of its output when it failed; Error when it
// could not run.
type CheckResult struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	Output   string `json:"output,omitempty"`
	Error    string `json:"error,omitempty"`
}

// TaskVerification is a done task checked again: Passed when every check
// exited 0 and every file exists; Reopened when it failed and is planned
// again. A check that could not run (no sandbox) leaves the task as it was.
type TaskVerification struct {
	TaskID       string        `json:"taskId"`
	Title        string        `json:"title"`
	Passed       bool          `json:"passed"`
	Reopened     bool          `json:"reopened"`
	Checks       []CheckResult `json:"checks"`
	MissingFiles []string      `json:"missingFiles,omitempty"`
}

// BlueprintVerifyResult lists the done tasks verified.
type BlueprintVerifyResult struct {
	Data []TaskVerification `json:"data"`
}
