package projects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// Intent from chat (docs/manager.md#intent-from-chat): the effects around
// the pure part in package manager — read the project's settings and
// blueprint tree, ask the classifier (retried once), apply the routing
// (set the phase and tick, tick, pause, ask for a confirmation), tell the
// thread, and keep a receipt among the workspace's ticks (result
// "intent").

// BlueprintTree is what intent from chat needs of the blueprints service.
type BlueprintTree interface {
	// Tree is a blueprint's nodes (primary version), in tree order.
	Tree(ctx context.Context, blueprintID string) ([]protocol.BlueprintNode, error)
	// Amend ingests a new version of a blueprint: its primary version's
	// document with a section (heading, text) added at its end.
	Amend(ctx context.Context, blueprintID, heading, text string) (versionID string, err error)
}

// IntentOptions configure intent from chat.
type IntentOptions struct {
	// Tree reads the blueprint a START_BUILD's target is resolved in.
	Tree BlueprintTree
	// Config resolves the classifier's model: [roles.intent] when set,
	// else the thread's model.
	Config config.Config
}

// The router's request and answer are the thread port's
// (session/port): session asks, this package answers, and neither
// imports the other.
type (
	IntentRequest = port.IntentRequest
	IntentOutcome = port.IntentOutcome
	IntentConfirm = port.IntentConfirm
)

// ResultIntent is the result of a stored intent routing (a row of the
// workspace's manager ticks that is not a tick).
const ResultIntent = "intent"

// maxPromptPhases bounds the phase titles the classifier is shown.
const maxPromptPhases = 30

// intentInput is an intent routing's input as stored.
type intentInput struct {
	ThreadID string `json:"threadId"`
	Text     string `json:"text"`
	Model    string `json:"model"`
	// Answers are the classifier's raw answers (two when the first was
	// not valid); Errors what was wrong with each.
	Answers     []string `json:"answers"`
	Errors      []string `json:"errors,omitempty"`
	BlueprintID string   `json:"blueprintId,omitempty"`
	// Nodes are the tree the target was resolved in (START_BUILD only).
	Nodes []protocol.BlueprintNode `json:"nodes,omitempty"`
	// Confirmed is set on the receipt of a plan change's confirmation
	// (the user's answer, not a decision: replay skips it).
	Confirmed *bool `json:"confirmed,omitempty"`
}

// intentReceipt is an intent routing's decision as stored.
type intentReceipt struct {
	Classification *manager.Classification `json:"classification,omitempty"`
	Routing        manager.Routing         `json:"routing"`
	// Tick is the tick the routing ran (start or continue a build).
	Tick    *manager.Decision `json:"tick,omitempty"`
	Message string            `json:"message"`
	Error   string            `json:"error,omitempty"`
}

// RouteIntent routes a thread's message (session.IntentRouter, through
// cmd/apserver): nothing (answer) unless
// the workspace is a project whose mode is not off; then the message is
// classified and acted on.
func (s *Service) RouteIntent(ctx context.Context, r IntentRequest) IntentOutcome {
	answer := IntentOutcome{Answer: true}
	if r.Cwd == "" {
		return answer
	}
	ws, err := workspace(r.Cwd)
	if err != nil {
		return answer
	}
	st, err := s.settings(ctx, ws)
	if err != nil {
		s.opts.Log.Warn("intent: reading the project's settings", "cwd", ws, "err", err)
		return answer
	}
	if st.Mode == manager.ModeOff || st.Mode == "" {
		return answer
	}
	in := intentInput{ThreadID: r.ThreadID, Text: r.Text, BlueprintID: st.BlueprintID}
	var nodes []protocol.BlueprintNode
	if st.BlueprintID != "" && s.opts.Intent.Tree != nil {
		if nodes, err = s.opts.Intent.Tree.Tree(ctx, st.BlueprintID); err != nil {
			s.opts.Log.Warn("intent: reading the blueprint", "blueprint", st.BlueprintID, "err", err)
			nodes = nil
		}
	}
	var phases []string
	for _, n := range nodes {
		if n.Kind == protocol.KindPhase && len(phases) < maxPromptPhases {
			phases = append(phases, n.Title)
		}
	}
	rec := intentReceipt{}
	c, err := s.classify(ctx, r, manager.IntentPrompt(r.Text, phases), &in)
	if err != nil {
		rec.Routing = manager.Routing{Intent: manager.IntentQuestion, Answered: true}
		rec.Error = err.Error()
		rec.Message = "The manager could not tell what this message asks of it (" + err.Error() + "), so it is answered as a question."
		s.recordIntent(ctx, ws, in, rec)
		return IntentOutcome{Message: rec.Message, Answer: true}
	}
	rec.Classification = &c
	rt := manager.Route(c, st.BlueprintID != "", nodes)
	rec.Routing = rt
	if rt.Resolution != nil || (rt.Intent == manager.IntentStartBuild && rt.Reason != "") {
		in.Nodes = compactNodes(nodes)
	}
	out := IntentOutcome{Answer: rt.Answered}
	if rt.Action == manager.ActionConfirmPlanChange {
		rec.Message = "The manager asks you to confirm this change first."
		out.Confirm = s.confirmation(ws, st.BlueprintID, r, c, rt)
	} else {
		rec.Message, rec.Tick, err = s.applyRouting(ctx, ws, rt)
		if err != nil {
			rec.Error = err.Error()
		}
	}
	out.Message = rec.Message
	s.recordIntent(ctx, ws, in, rec)
	s.notify(ws)
	return out
}

// confirmation is a plan change's question and its application: a new
// version of the blueprint, ingested from its document with the message
// added as a section, once the user confirms; a receipt either way.
func (s *Service) confirmation(ws, bpID string, r IntentRequest, c manager.Classification, rt manager.Routing) *IntentConfirm {
	heading, what := "Plan adjustment", "change the plan"
	if rt.Intent == manager.IntentUpdateRequirements {
		heading, what = "Requirements update", "update the requirements"
	}
	if c.Target != "" {
		what += " (" + c.Target + ")"
	}
	q := fmt.Sprintf("Apply this to blueprint %s? The manager would %s: its document gets a section %q holding your message, and the blueprint is ingested again as a new version.", bpID, what, heading)
	return &IntentConfirm{Question: q, Apply: func(ctx context.Context, confirmed bool) string {
		in := intentInput{ThreadID: r.ThreadID, Text: r.Text, BlueprintID: bpID, Confirmed: &confirmed}
		rec := intentReceipt{Routing: rt}
		switch {
		case !confirmed:
			rec.Message = "The manager left the plan as it is (not confirmed)."
		case s.opts.Intent.Tree == nil:
			rec.Message, rec.Error = "The manager cannot change blueprints here.", "no blueprints service"
		default:
			v, err := s.opts.Intent.Tree.Amend(ctx, bpID, heading, r.Text)
			if err != nil {
				rec.Message, rec.Error = "The manager could not change the blueprint: "+plain(err)+".", err.Error()
			} else {
				rec.Message = fmt.Sprintf("The manager is ingesting version %s of blueprint %s with the section %q; blueprint/progress reports it, and the manager plans from it once it is ready.", v, bpID, heading)
			}
		}
		s.recordIntent(ctx, ws, in, rec)
		s.notify(ws)
		return rec.Message
	}}
}

// compactNodes keeps what the resolver reads of each node.
func compactNodes(nodes []protocol.BlueprintNode) []protocol.BlueprintNode {
	out := make([]protocol.BlueprintNode, len(nodes))
	for i, n := range nodes {
		out[i] = protocol.BlueprintNode{ID: n.ID, Kind: n.Kind, Title: n.Title, Depth: n.Depth, Status: n.Status}
	}
	return out
}

// classify asks the classifier, and once more when its answer is not
// valid; the error names what was wrong with the last answer.
func (s *Service) classify(ctx context.Context, r IntentRequest, prompt string, in *intentInput) (manager.Classification, error) {
	name, prov, err := s.classifier(r)
	if err != nil {
		in.Errors = append(in.Errors, err.Error())
		return manager.Classification{}, fmt.Errorf("no classifier model: %w", err)
	}
	in.Model = name
	var last error
	for range 2 {
		raw, err := ask(ctx, name, prov, prompt)
		in.Answers = append(in.Answers, raw)
		if err == nil {
			var c manager.Classification
			if c, err = manager.ParseIntent(raw); err == nil {
				return c, nil
			}
		}
		in.Errors = append(in.Errors, err.Error())
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return manager.Classification{}, fmt.Errorf("the classifier's answer was not valid twice: %w", last)
}

// classifier is the classifier's model: the "intent" role's, else the
// thread's.
func (s *Service) classifier(r IntentRequest) (string, model.Provider, error) {
	cfg := s.opts.Intent.Config
	if role, ok := cfg.Roles["intent"]; ok && role.Model != "" {
		return cfg.ResolveModel("intent", "")
	}
	return cfg.ResolveThreadModel(r.Model, r.Provider)
}

// ask sends one prompt to the classifier and returns its answer's text.
func ask(ctx context.Context, name string, prov model.Provider, prompt string) (string, error) {
	mc := model.NewClient(prov, nil)
	req := model.Request{
		Model:        name,
		Instructions: manager.IntentInstructions,
		Input:        []model.Entry{{Kind: model.EntryUser, Text: prompt}},
		OutputSchema: &model.OutputSchema{Name: "intent", Schema: manager.IntentSchema, Strict: true},
	}
	var deltas strings.Builder
	whole := ""
	err := mc.Stream(ctx, req, func(ev model.Event) {
		switch ev.Kind {
		case model.EvTextDelta:
			deltas.WriteString(ev.Text)
		case model.EvMessageDone:
			if ev.Text != "" {
				whole = ev.Text
			}
		}
	})
	if whole == "" {
		whole = deltas.String()
	}
	if err != nil {
		return whole, fmt.Errorf("asking the classifier: %w", err)
	}
	return whole, nil
}

// applyRouting carries out a routing and says what the manager did.
func (s *Service) applyRouting(ctx context.Context, ws string, rt manager.Routing) (string, *manager.Decision, error) {
	if rt.Answered {
		return rt.Reason, nil, nil // a low confidence is said; a question is just answered
	}
	if rt.Action == "" {
		return "The manager did nothing: " + rt.Reason + ".", nil, nil
	}
	var did string
	switch rt.Action {
	case manager.ActionPause:
		if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Paused = true }); err != nil {
			return "The manager could not pause the autopilot: " + plain(err) + ".", nil, err
		}
		return "The manager paused the autopilot: no run starts until it is resumed (say \"continue\", or set paused to false).", nil, nil
	case manager.ActionStartBuild:
		res := rt.Resolution
		st, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Phase, st.Paused = res.Phase, false })
		if err != nil {
			return "The manager could not set the phase: " + plain(err) + ".", nil, err
		}
		did = fmt.Sprintf("The manager set the active phase to %q (%s)", res.PhaseTitle, res.Phase)
		if res.Node != "" {
			did += fmt.Sprintf(", the phase of %q", res.NodeTitle)
		}
		if st.Mode == manager.ModeSuggest {
			did += "; in suggest mode it only proposes runs"
		}
	case manager.ActionContinueBuild:
		if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Paused = false }); err != nil {
			return "The manager could not resume the autopilot: " + plain(err) + ".", nil, err
		}
		did = "The manager resumed the autopilot"
	}
	d, err := s.Tick(ctx, ws)
	if err != nil {
		return did + ", but its tick failed: " + plain(err) + ".", nil, err
	}
	switch d.Result {
	case manager.ResultStartedRun:
		did += fmt.Sprintf(" and started run %s for task %s.", d.RunID, strings.Join(d.TaskIDs, ", "))
	case manager.ResultAdvancedRun:
		did += fmt.Sprintf(" and advanced run %s: %s.", d.RunID, d.Reason)
	default:
		did += fmt.Sprintf("; its tick answered %s: %s.", d.Result, d.Reason)
	}
	return did, &d, nil
}

// plain is an error's message without the JSON-RPC prefix.
func plain(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return strings.TrimPrefix(pe.Msg, "Invalid params: ")
	}
	return err.Error()
}

func (s *Service) recordIntent(ctx context.Context, ws string, in intentInput, rec intentReceipt) {
	db, err := s.opts.Store()
	if err == nil {
		var ib, rb []byte
		if ib, err = json.Marshal(in); err == nil {
			if rb, err = json.Marshal(rec); err == nil {
				_, err = db.AppendManagerTick(ctx, store.ManagerTick{Cwd: ws, Input: ib, Decision: rb, Result: ResultIntent, At: s.opts.Clock.Now().UnixMilli()})
			}
		}
	}
	if err != nil {
		s.opts.Log.Warn("intent: storing the receipt", "cwd", ws, "err", err)
	}
}

// replayIntent decides again on a stored intent routing: the last answer
// validated, then routed over the stored tree; "" when it is the stored
// routing.
func replayIntent(t store.ManagerTick) (string, error) {
	var in intentInput
	var r intentReceipt
	if err := json.Unmarshal(t.Input, &in); err != nil {
		return "", err
	}
	if err := json.Unmarshal(t.Decision, &r); err != nil {
		return "", err
	}
	if in.Confirmed != nil {
		return "", nil
	}
	var again manager.Routing
	if len(in.Answers) > 0 {
		c, err := manager.ParseIntent(in.Answers[len(in.Answers)-1])
		if err != nil {
			again = manager.Routing{Intent: manager.IntentQuestion, Answered: true}
		} else {
			again = manager.Route(c, in.BlueprintID != "", in.Nodes)
		}
	} else {
		again = manager.Routing{Intent: manager.IntentQuestion, Answered: true}
	}
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(r.Routing)
	if string(a) != string(b) {
		return fmt.Sprintf("intent %d: stored %s, routed %s", t.Seq, b, a), nil
	}
	return "", nil
}
