package protocol

import "strings"

// A run started from a blueprint (docs/runs.md, "Runs from a blueprint"):
// run/start names a node of a blueprint, or some of its tasks, instead of
// (or besides) free text; the run's plan starts from those tasks, and a
// task's commit on the run's branch is the evidence that makes the
// blueprint's task done (docs/blueprints.md, "Status from evidence").

// RunBlueprintParams is run/start's blueprint: a node (its tasks and those
// of the nodes under it) or a list of task ids, of the blueprint's primary
// version. Give nodeId or taskIds, not both.
type RunBlueprintParams struct {
	BlueprintID string   `json:"blueprintId"`
	NodeID      string   `json:"nodeId,omitempty"`
	TaskIDs     []string `json:"taskIds,omitempty"`
}

// Validate checks run/start's blueprint.
func (p *RunBlueprintParams) Validate() error {
	switch {
	case p.BlueprintID == "":
		return MissingField("blueprint.blueprintId")
	case p.NodeID != "" && len(p.TaskIDs) > 0:
		return Errorf(ErrInvalidParams, "Invalid params: blueprint: give nodeId or taskIds, not both")
	case p.NodeID == "" && len(p.TaskIDs) == 0:
		return MissingField("blueprint.nodeId")
	}
	seen := map[string]bool{}
	for i, id := range p.TaskIDs {
		if strings.TrimSpace(id) == "" {
			return Errorf(ErrInvalidParams, "Invalid params: blueprint.taskIds[%d] must not be empty", i)
		}
		if seen[id] {
			return Errorf(ErrInvalidParams, "Invalid params: blueprint.taskIds: task %q appears twice", id)
		}
		seen[id] = true
	}
	return nil
}

// RunBlueprint is the blueprint a run was started from: the version its
// tasks were read from, the node (when started from one) and the
// blueprint's task ids, which are the run's task ids.
type RunBlueprint struct {
	BlueprintID string   `json:"blueprintId"`
	VersionID   string   `json:"versionId"`
	NodeID      string   `json:"nodeId,omitempty"`
	TaskIDs     []string `json:"taskIds"`
}

// TaskEvidence is what made a blueprint's task done: the run whose
// validator passed it, and its commit on the run's branch.
type TaskEvidence struct {
	RunID  string `json:"runId"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	AtMs   int64  `json:"atMs"`
}
