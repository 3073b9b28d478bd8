package autodrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// The decision model is the config's "decision" role ([roles.decision]);
// without that role full auto runs on the deterministic policy alone. It
// is asked with JSON-schema structured output, through the same scheduler
// as the agent's model calls (Stream).

// decisionModelTimeout bounds one question to the decision model.
const decisionModelTimeout = 2 * time.Minute

// DecisionRole is the config role of the decision model.
const DecisionRole = "decision"

// DecisionModel is the decision model: its name, its client and the
// scheduler's stream that every model call goes through.
type DecisionModel struct {
	Name   string
	Client *model.Client
	Stream func(ctx context.Context, c *model.Client, req model.Request, fn func(model.Event)) error
}

// ask sends one structured-output request and returns the answer text.
func (d *DecisionModel) ask(ctx context.Context, instructions, prompt, schemaName string, schema json.RawMessage) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, decisionModelTimeout)
	defer cancel()
	req := model.Request{
		Model:        d.Name,
		Instructions: instructions,
		Input:        []model.Entry{{Kind: model.EntryUser, Text: prompt}},
		OutputSchema: &model.OutputSchema{Name: schemaName, Schema: schema, Strict: true},
	}
	var deltas strings.Builder
	var done string
	err := d.Stream(ctx, d.Client, req, func(ev model.Event) {
		switch ev.Kind {
		case model.EvTextDelta:
			deltas.WriteString(ev.Text)
		case model.EvMessageDone:
			done = ev.Text
		}
	})
	if err != nil {
		return nil, fmt.Errorf("asking the decision model: %w", err)
	}
	out := done
	if out == "" {
		out = deltas.String()
	}
	if strings.TrimSpace(out) == "" {
		return nil, errors.New("the decision model gave no answer")
	}
	return []byte(strings.TrimSpace(out)), nil
}

// Decide asks the decision model about a finished turn.
func (d *DecisionModel) Decide(ctx context.Context, in controller.Input) (controller.ModelAnswer, error) {
	raw, err := d.ask(ctx, controller.ModelInstructions(), controller.ModelPrompt(in), "fullauto_decision", controller.ModelSchema())
	if err != nil {
		return controller.ModelAnswer{}, err
	}
	return controller.ParseModelAnswer(raw)
}

// RequestAnswer is the decision model's answer to an approval or a
// question.
type RequestAnswer struct {
	Outcome    string          // accept or decline (approvals); accept (questions)
	Answer     json.RawMessage // the answer to the request, as a client would give it
	Raw        json.RawMessage // the model's answer, for the receipt
	Reason     string
	Confidence float64
}

const requestInstructions = `You stand in for the user of an autonomous coding agent that works toward an objective without a human watching.
The agent needs an answer before it can go on: either approval for an action, or the answer to its question.
Approve only what serves the objective and is safe to do in the user's workspace; decline anything destructive, irreversible, outside the workspace, or unrelated to the objective.
Answer a question only when the objective or common engineering sense settles it.
reason: one sentence. confidence: 0 to 1, how sure you are that the user would answer the same; when unsure, say so with a low confidence and a human will be asked instead.
Answer only with the JSON object the schema describes.`

var approvalSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"decision":{"type":"string","enum":["accept","decline"]},` +
	`"reason":{"type":"string"},"confidence":{"type":"number"}},` +
	`"required":["decision","reason","confidence"],"additionalProperties":false}`)

var questionSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"answers":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"answer":{"type":"string"}},` +
	`"required":["id","answer"],"additionalProperties":false}},` +
	`"reason":{"type":"string"},"confidence":{"type":"number"}},` +
	`"required":["answers","reason","confidence"],"additionalProperties":false}`)

// Answer asks the decision model to answer req for the user.
func (d *DecisionModel) Answer(ctx context.Context, objective string, req Request) (RequestAnswer, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "objective: %s\n\n", objective)
	schema, name := approvalSchema, "fullauto_approval"
	switch p := req.Params.(type) {
	case protocol.CommandApprovalParams:
		fmt.Fprintf(&b, "The agent asks to run this shell command:\n%s\n", req.Command)
		if p.Cwd != nil {
			fmt.Fprintf(&b, "in: %s\n", *p.Cwd)
		}
		if p.Reason != nil {
			fmt.Fprintf(&b, "its reason: %s\n", *p.Reason)
		}
		if req.Rule != "" {
			fmt.Fprintf(&b, "command rules say: %s (%s)\n", req.Rule, req.RuleName)
		}
	case protocol.FileChangeApprovalParams:
		fmt.Fprintf(&b, "The agent asks to change these files: %s\n", strings.Join(req.Paths, ", "))
		if !req.InsideWorkspace {
			b.WriteString("Some of them are outside the workspace.\n")
		}
	case protocol.ToolRequestUserInputParams:
		schema, name = questionSchema, "fullauto_answer"
		b.WriteString("The agent asks:\n")
		for _, q := range p.Questions {
			fmt.Fprintf(&b, "- id %s: %s %s\n", q.ID, q.Header, q.Question)
			for _, o := range q.Options {
				fmt.Fprintf(&b, "    option %q: %s\n", o.Label, o.Description)
			}
		}
		b.WriteString("Answer each question by id, with an option's label when one fits.\n")
	default:
		return RequestAnswer{}, fmt.Errorf("the decision model cannot answer %s", req.Method)
	}
	raw, err := d.ask(ctx, requestInstructions, b.String(), name, schema)
	if err != nil {
		return RequestAnswer{}, err
	}
	ra := RequestAnswer{Raw: raw}
	if name == "fullauto_answer" {
		var v struct {
			Answers []struct {
				ID     string `json:"id"`
				Answer string `json:"answer"`
			} `json:"answers"`
			Reason     string  `json:"reason"`
			Confidence float64 `json:"confidence"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return ra, fmt.Errorf("decoding the decision model's answer: %w", err)
		}
		answers := map[string]any{}
		for _, a := range v.Answers {
			answers[a.ID] = map[string]any{"answers": []string{a.Answer}}
		}
		ra.Answer, _ = json.Marshal(map[string]any{"answers": answers})
		ra.Outcome, ra.Reason, ra.Confidence = controller.OutcomeAccept, v.Reason, v.Confidence
		return ra, nil
	}
	var v struct {
		Decision   string  `json:"decision"`
		Reason     string  `json:"reason"`
		Confidence float64 `json:"confidence"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return ra, fmt.Errorf("decoding the decision model's answer: %w", err)
	}
	if v.Decision != controller.OutcomeAccept && v.Decision != controller.OutcomeDecline {
		return ra, fmt.Errorf("the decision model answered %q", v.Decision)
	}
	ra.Outcome, ra.Reason, ra.Confidence = v.Decision, v.Reason, v.Confidence
	ra.Answer = DecisionJSON(protocol.Decision(v.Decision))
	return ra, nil
}
