package agenttools

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func TestParseDecision(t *testing.T) {
	proposed := protocol.DecisionProposed
	for _, tc := range []struct {
		args    string
		want    protocol.ProjectDecisionAddParams
		wantErr string
	}{
		{`{"title":"Use PostgreSQL","text":"All data in PostgreSQL.","why":"ops","alternatives":["SQLite"],"files":["db/**"],"tags":["storage"]}`,
			protocol.ProjectDecisionAddParams{Title: "Use PostgreSQL", Text: "All data in PostgreSQL.", Why: "ops", Alternatives: []string{"SQLite"},
				Source: "model", Status: &proposed, Scope: &protocol.DecisionScope{Files: []string{"db/**"}, Tags: []string{"storage"}}}, ""},
		{`{"title":"  ","text":"x"}`, protocol.ProjectDecisionAddParams{}, "record_decision: title and text are required"},
		{`{"title":"t"}`, protocol.ProjectDecisionAddParams{}, "record_decision: title and text are required"},
		{`{"title":`, protocol.ProjectDecisionAddParams{}, "record_decision: invalid arguments: unexpected end of JSON input"},
	} {
		got, err := ParseDecision(tc.args)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseDecision(%s) error = %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDecision(%s) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	if !json.Valid(RecordDecisionTool.Parameters) || RecordDecisionTool.Name != RecordDecision {
		t.Error("record_decision's tool is not valid JSON schema text")
	}
}
