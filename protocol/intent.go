package protocol

// Intent from chat and the manager's recent decisions (docs/manager.md):
// what project/status and manager/explain report of them.

// ManagerRecord is one recent decision of a project's manager: a tick
// (kind "tick": result and reason) or the routing of a thread's message
// (kind "intent": the intent acted on, the thread, the manager's message).
type ManagerRecord struct {
	Kind   string `json:"kind"` // "tick" | "intent"
	Seq    int64  `json:"seq"`
	AtMs   int64  `json:"atMs"`
	Result string `json:"result,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Ticks: the run a tick started or advanced, and its tasks.
	RunID   string   `json:"runId,omitempty"`
	TaskIDs []string `json:"taskIds,omitempty"`
	// Intent routings.
	Intent     string  `json:"intent,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Target     string  `json:"target,omitempty"`
	ThreadID   string  `json:"threadId,omitempty"`
	Message    string  `json:"message,omitempty"`
	Error      string  `json:"error,omitempty"`
}
