package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Review is the validator model's answer about a task's diff, its
// structured output: {"pass": boolean, "findings": string}, both required
// and nothing else. Pass is true only when the diff does what the task
// says and meets its acceptance criteria; Findings says what is wrong, or
// why it is right.
type Review struct {
	Pass     bool   `json:"pass"`
	Findings string `json:"findings"`
}

// ReviewSchema is Review as the output schema of the validator's turn
// (strict: every property required, no other).
const ReviewSchema = `{"type":"object","additionalProperties":false,"required":["pass","findings"],"properties":{"pass":{"type":"boolean"},"findings":{"type":"string"}}}`

// ParseReview reads the validator's answer. Model output is untrusted: the
// answer must be one JSON object (a code fence around it is tolerated)
// with a boolean pass and a string findings and no other field; the error
// names what is wrong.
func ParseReview(text string) (Review, error) {
	s := strings.TrimSpace(text)
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &fields); err != nil || fields == nil {
		return Review{}, fmt.Errorf("not a JSON object {pass, findings}: %.120q", strings.TrimSpace(text))
	}
	var extra []string
	for k := range fields {
		if k != "pass" && k != "findings" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return Review{}, fmt.Errorf("unknown field %q (only pass and findings)", extra[0])
	}
	var r Review
	p, ok := fields["pass"]
	if !ok {
		return Review{}, fmt.Errorf("pass is missing")
	}
	if err := strict(p, &r.Pass); err != nil {
		return Review{}, fmt.Errorf("pass must be a boolean, got %s", clip(p))
	}
	f, ok := fields["findings"]
	if !ok {
		return Review{}, fmt.Errorf("findings is missing")
	}
	if err := strict(f, &r.Findings); err != nil {
		return Review{}, fmt.Errorf("findings must be a string, got %s", clip(f))
	}
	return r, nil
}

// strict decodes raw into v, refusing null (which json leaves as the zero
// value).
func strict(raw json.RawMessage, v any) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("null")
	}
	return json.Unmarshal(raw, v)
}

func clip(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
