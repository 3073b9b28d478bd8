package manager

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Suggest mode (docs/manager.md#suggest): the tick proposes the run it
// would start (a Proposal, waiting for a human in attention) and starts
// it only once the proposal is approved (manager/approve). A proposal's id
// is a function of the blueprint and its tasks, so that ticks propose the
// same id again until the state changes, and replay decides the same.

// Proposal is a run suggest proposes: its id and tasks.
type Proposal struct {
	ID          string   `json:"id"`
	BlueprintID string   `json:"blueprintId"`
	Phase       string   `json:"phase"`
	TaskIDs     []string `json:"taskIds"`
	At          int64    `json:"at"` // unix ms, when first proposed
}

// ProposalID is the id of the proposal to run tasks of a blueprint.
func ProposalID(blueprintID string, taskIDs []string) string {
	h := sha256.Sum256([]byte(blueprintID + "\x00" + strings.Join(taskIDs, "\x00")))
	return "prop_" + hex.EncodeToString(h[:6])
}
