package session

import (
	"encoding/json"
	"strings"

	"github.com/apserver/apserver/model"
)

// outputSchema is the structured output a turn asked for with
// turn/start's outputSchema (nil: free text). The model is held to it.
func outputSchema(raw json.RawMessage) *model.OutputSchema {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil
	}
	return &model.OutputSchema{Name: "codex_output_schema", Schema: raw, Strict: true}
}
