package protocol

// Conversation summaries of the project brain (apserver's extension,
// docs/brain.md): each thread of a project keeps a rolling summary.
// MethodProjectSummaryList is generated into methods_gen.go from
// protocol/apserver/schema.

// ProjectSummaryListParams lists the summaries of a project's threads.
type ProjectSummaryListParams struct {
	Cwd string `json:"cwd"`
}

// Validate checks that cwd is present.
func (p *ProjectSummaryListParams) Validate() error {
	if p.Cwd == "" {
		return MissingField("cwd")
	}
	return nil
}

// ProjectThreadSummary is a thread's rolling summary: the turns it covers
// and when it was written.
type ProjectThreadSummary struct {
	ThreadID    string `json:"threadId"`
	Cwd         string `json:"cwd"`
	Summary     string `json:"summary"`
	Turns       int    `json:"turns"`
	UpdatedAtMs int64  `json:"updatedAtMs"`
}

// ProjectSummaryListResult holds the summaries, the most recent first.
type ProjectSummaryListResult struct {
	Summaries []ProjectThreadSummary `json:"summaries"`
}
