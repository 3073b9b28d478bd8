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
	return []byte(strings.TrimSpace(out)), nil
}

// errNoAnswer: the decision model answered nothing.
var errNoAnswer = errors.New("the decision model gave no answer")

// askValid asks, and checks the answer with check (which keeps what it
// parsed). Model output is untrusted: an answer check refuses is asked for
// once more, saying what was wrong; a second refused answer is an error
// naming it. A model that cannot be reached is an error at once (the
// client has retried already).
func (d *DecisionModel) askValid(ctx context.Context, instructions, prompt, schemaName string, schema json.RawMessage, check func([]byte) error) ([]byte, error) {
	checked := func(raw []byte) error {
		if len(raw) == 0 {
			return errNoAnswer
		}
		return check(raw)
	}
	raw, err := d.ask(ctx, instructions, prompt, schemaName, schema)
	if err != nil {
		return nil, err
	}
	bad := checked(raw)
	if bad == nil {
		return raw, nil
	}
	again := fmt.Sprintf("%s\n\nYour previous answer was not valid: %v. Answer again with only the JSON object the schema describes.", prompt, bad)
	if raw, err = d.ask(ctx, instructions, again, schemaName, schema); err != nil {
		return nil, err
	}
	if bad := checked(raw); bad != nil {
		return raw, fmt.Errorf("the decision model's answer is not valid, twice: %w", bad)
	}
	return raw, nil
}

// Decide asks the decision model about a finished turn.
func (d *DecisionModel) Decide(ctx context.Context, in controller.Input) (controller.ModelAnswer, error) {
	var a controller.ModelAnswer
	_, err := d.askValid(ctx, controller.ModelInstructions(), controller.ModelPrompt(in), "fullauto_decision", controller.ModelSchema(), func(raw []byte) error {
		var err error
		a, err = controller.ParseModelAnswer(raw)
		return err
	})
	if err != nil {
		return controller.ModelAnswer{}, err
	}
	return a, nil
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
	var ra RequestAnswer
	parse := parseApproval
	if name == "fullauto_answer" {
		asked := map[string]bool{}
		for _, q := range req.Params.(protocol.ToolRequestUserInputParams).Questions {
			asked[q.ID] = true
		}
		parse = func(raw []byte) (RequestAnswer, error) { return parseAnswers(raw, asked) }
	}
	raw, err := d.askValid(ctx, requestInstructions, b.String(), name, schema, func(raw []byte) error {
		var err error
		ra, err = parse(raw)
		return err
	})
	if err != nil {
		return RequestAnswer{Raw: raw}, err
	}
	ra.Raw = raw
	return ra, nil
}

// parseAnswers reads the decision model's answers to the questions asked
// (by id): each answer names an asked question and says something, every
// question is answered, and the confidence is between 0 and 1.
func parseAnswers(raw []byte, asked map[string]bool) (RequestAnswer, error) {
	var v struct {
		Answers []struct {
			ID     string `json:"id"`
			Answer string `json:"answer"`
		} `json:"answers"`
		Reason     string  `json:"reason"`
		Confidence float64 `json:"confidence"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return RequestAnswer{}, fmt.Errorf("decoding the decision model's answer: %w", err)
	}
	answers := map[string]any{}
	for i, a := range v.Answers {
		switch {
		case !asked[a.ID]:
			return RequestAnswer{}, fmt.Errorf("answers[%d].id: %q is not a question asked", i, a.ID)
		case strings.TrimSpace(a.Answer) == "":
			return RequestAnswer{}, fmt.Errorf("answers[%d].answer: empty", i)
		}
		answers[a.ID] = map[string]any{"answers": []string{a.Answer}}
	}
	for id := range asked {
		if _, ok := answers[id]; !ok {
			return RequestAnswer{}, fmt.Errorf("answers: question %q has no answer", id)
		}
	}
	if err := checkConfidence(v.Confidence); err != nil {
		return RequestAnswer{}, err
	}
	ra := RequestAnswer{Outcome: controller.OutcomeAccept, Reason: v.Reason, Confidence: v.Confidence}
	ra.Answer, _ = json.Marshal(map[string]any{"answers": answers})
	return ra, nil
}

// parseApproval reads the decision model's answer to an approval: accept
// or decline, with a confidence between 0 and 1.
func parseApproval(raw []byte) (RequestAnswer, error) {
	var v struct {
		Decision   string  `json:"decision"`
		Reason     string  `json:"reason"`
		Confidence float64 `json:"confidence"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return RequestAnswer{}, fmt.Errorf("decoding the decision model's answer: %w", err)
	}
	if v.Decision != controller.OutcomeAccept && v.Decision != controller.OutcomeDecline {
		return RequestAnswer{}, fmt.Errorf("decision: %q is neither accept nor decline", v.Decision)
	}
	if err := checkConfidence(v.Confidence); err != nil {
		return RequestAnswer{}, err
	}
	return RequestAnswer{Outcome: v.Decision, Reason: v.Reason, Confidence: v.Confidence, Answer: DecisionJSON(protocol.Decision(v.Decision))}, nil
}

func checkConfidence(c float64) error {
	if c < 0 || c > 1 {
		return fmt.Errorf("confidence: %v is not between 0 and 1", c)
	}
	return nil
}
