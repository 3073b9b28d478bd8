package agenttools

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// RecordDecision is the model's way to record a decision about its
// project: a proposed one, which a human (project/decision/update) or, in
// a run, the run's trust confirms. Offered when a project brain is wired.
const RecordDecision = "record_decision"

// RecordDecisionTool is record_decision as the model is offered it.
var RecordDecisionTool = model.Tool{Name: RecordDecision,
	Description: "Record a decision about this project (a technology, a convention, a design choice) so that later work follows it. It is recorded as proposed; a human, or the run's trust, confirms it. Name the alternatives you rejected.",
	Parameters: json.RawMessage(`{"type":"object","properties":{
  "title":{"type":"string","description":"The decision in a few words, e.g. Use PostgreSQL."},
  "text":{"type":"string","description":"What was decided."},
  "why":{"type":"string"},
  "alternatives":{"type":"array","items":{"type":"string"},"description":"Options rejected."},
  "files":{"type":"array","items":{"type":"string"},"description":"Globs of the files it concerns."},
  "tags":{"type":"array","items":{"type":"string"}}},
 "required":["title","text"],"additionalProperties":false}`)}

// ParseDecision reads record_decision's arguments as a proposed decision
// from the model; the error is the tool output the model gets.
func ParseDecision(args string) (protocol.ProjectDecisionAddParams, error) {
	var a struct {
		Title, Text, Why    string
		Alternatives, Files []string
		Tags                []string
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return protocol.ProjectDecisionAddParams{}, errors.New("record_decision: invalid arguments: " + err.Error())
	}
	if strings.TrimSpace(a.Title) == "" || strings.TrimSpace(a.Text) == "" {
		return protocol.ProjectDecisionAddParams{}, errors.New("record_decision: title and text are required")
	}
	proposed := protocol.DecisionProposed
	return protocol.ProjectDecisionAddParams{Title: a.Title, Text: a.Text, Why: a.Why, Alternatives: a.Alternatives, Source: "model", Status: &proposed,
		Scope: &protocol.DecisionScope{Files: a.Files, Tags: a.Tags}}, nil
}
