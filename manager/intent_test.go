package manager

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// tree is a blueprint of two phases:
//
//	p1 Phase one: accounts
//	  e1 Authentication
//	    f1 Login feature
//	      t1 Login form
//	    f2 Password reset
//	p2 Phase two: reports
//	  f3 Monthly report
//	  f4 Login audit report
func tree() []protocol.BlueprintNode {
	n := func(id string, kind protocol.NodeKind, depth int, title string) protocol.BlueprintNode {
		return protocol.BlueprintNode{ID: id, Kind: kind, Depth: depth, Title: title, Status: protocol.NodeStatus("todo")}
	}
	return []protocol.BlueprintNode{
		n("p1", protocol.KindPhase, 0, "Phase one: accounts"),
		n("e1", protocol.KindEpic, 1, "Authentication"),
		n("f1", protocol.KindFeature, 2, "Login feature"),
		n("t1", protocol.KindTask, 3, "Login form"),
		n("f2", protocol.KindFeature, 2, "Password reset"),
		n("p2", protocol.KindPhase, 0, "Phase two: reports"),
		n("f3", protocol.KindFeature, 1, "Monthly report"),
		n("f4", protocol.KindFeature, 1, "Login audit report"),
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		target      string
		phase, node string
		err         string
	}{
		{"phase 1", "p1", "", ""},
		{"Phase 2", "p2", "", ""},
		{"1", "p1", "", ""},
		{"the second phase", "p2", "", ""},
		{"phase one", "p1", "", ""},
		{"p2", "p2", "", ""},
		{"Phase two: reports", "p2", "", ""},
		{"", "p1", "", ""},
		{"the login feature", "p1", "f1", ""},
		{"login", "p1", "f1", ""},
		{"password reset", "p1", "f2", ""},
		{"monthly reports", "p2", "f3", ""},
		{"t1", "p1", "t1", ""},
		{"phase 3", "", "", "the blueprint has 2 phases"},
		{"the billing feature", "", "", "no phase or node of the blueprint matches"},
		{"report", "p2", "f3", ""},       // the title with the fewest other words
		{"login report", "p2", "f4", ""}, // every word counts
	}
	for _, tt := range tests {
		r, err := Resolve(tt.target, tree())
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%q) = %+v, %v, want error %q", tt.target, r, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.target, err)
			continue
		}
		want := tt.phase
		if r.Phase != want || r.Node != tt.node {
			t.Errorf("Resolve(%q) = phase %q node %q, want %q %q", tt.target, r.Phase, r.Node, want, tt.node)
		}
	}
}

func TestResolveAmbiguousAcrossPhases(t *testing.T) {
	nodes := tree()
	nodes[4].Title = "Audit trail" // f2 in p1; f4 "Login audit report" in p2 is at depth 1
	nodes[4].Depth = 1
	nodes = append(nodes[:6], protocol.BlueprintNode{ID: "f5", Kind: protocol.KindFeature, Depth: 1, Title: "Audit export"})
	_, err := Resolve("audit", nodes)
	if err == nil || !strings.Contains(err.Error(), "several nodes in different phases") {
		t.Errorf("Resolve(audit) err = %v, want ambiguity", err)
	}
}

func TestResolveAllDone(t *testing.T) {
	nodes := tree()
	nodes[0].Status, nodes[5].Status = protocol.NodeDone, protocol.NodeDone
	if _, err := Resolve("", nodes); err == nil {
		t.Error("Resolve(\"\") on a finished blueprint: no error")
	}
	nodes[5].Status = "todo"
	if r, err := Resolve("", nodes); err != nil || r.Phase != "p2" {
		t.Errorf("Resolve(\"\") = %+v, %v, want p2", r, err)
	}
}

func TestParseIntent(t *testing.T) {
	tests := []struct {
		raw  string
		want Classification
		err  string
	}{
		{`{"intent":"START_BUILD","confidence":0.9,"target":" phase 1 "}`, Classification{IntentStartBuild, 0.9, "phase 1"}, ""},
		{`{"intent":"QUESTION","confidence":1,"target":""}`, Classification{IntentQuestion, 1, ""}, ""},
		{`{"intent":"BUILD","confidence":0.9,"target":""}`, Classification{}, "intent: \"BUILD\" is not one of"},
		{`{"intent":"OTHER","confidence":1.5,"target":""}`, Classification{}, "confidence: 1.5"},
		{`{"intent":"OTHER","confidence":-0.1,"target":""}`, Classification{}, "confidence: -0.1"},
		{`{"intent":"OTHER","confidence":0.5,"target":"","extra":1}`, Classification{}, "unknown field"},
		{`Sure! {"intent":"OTHER"}`, Classification{}, "not the JSON object"},
		{`{"intent":"OTHER","confidence":0.5,"target":""} trailing`, Classification{}, "text after"},
		{`{"intent":"OTHER","confidence":0.5,"target":"` + strings.Repeat("x", 600) + `"}`, Classification{}, "target: 600 bytes"},
	}
	for _, tt := range tests {
		got, err := ParseIntent(tt.raw)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseIntent(%.60s) err = %v, want %q", tt.raw, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseIntent(%s) = %+v, %v, want %+v", tt.raw, got, err, tt.want)
		}
	}
}

func TestRoute(t *testing.T) {
	tests := []struct {
		name     string
		c        Classification
		bp       bool
		answered bool
		action   string
		phase    string
		reason   string
	}{
		{"question", Classification{IntentQuestion, 0.9, ""}, true, true, "", "", ""},
		{"other", Classification{IntentOther, 0.9, ""}, true, true, "", "", ""},
		{"low confidence start is a question", Classification{IntentStartBuild, 0.59, "phase 1"}, true, true, "", "", "below 0.6"},
		{"start phase 1", Classification{IntentStartBuild, 0.6, "phase 1"}, true, false, "start_build", "p1", ""},
		{"start a feature", Classification{IntentStartBuild, 0.8, "the login feature"}, true, false, "start_build", "p1", ""},
		{"start unknown", Classification{IntentStartBuild, 0.8, "billing"}, true, false, "", "", "nothing started: no phase or node"},
		{"start without blueprint", Classification{IntentStartBuild, 0.8, "phase 1"}, false, false, "", "", "no active blueprint"},
		{"continue", Classification{IntentContinueBuild, 0.8, ""}, true, false, "continue_build", "", ""},
		{"pause without blueprint", Classification{IntentPauseAutopilot, 0.8, ""}, false, false, "pause", "", ""},
		{"adjust", Classification{IntentAdjustPlan, 0.8, "login"}, true, false, "confirm_plan_change", "", ""},
		{"requirements", Classification{IntentUpdateRequirements, 0.8, ""}, true, false, "confirm_plan_change", "", ""},
	}
	for _, tt := range tests {
		r := Route(tt.c, tt.bp, tree())
		phase := ""
		if r.Resolution != nil {
			phase = r.Resolution.Phase
		}
		if r.Answered != tt.answered || r.Action != tt.action || phase != tt.phase || !strings.Contains(r.Reason, tt.reason) {
			t.Errorf("%s: Route(%+v) = %+v (phase %q), want answered %v action %q phase %q reason ~%q", tt.name, tt.c, r, phase, tt.answered, tt.action, tt.phase, tt.reason)
		}
	}
}

func TestIntentPrompt(t *testing.T) {
	p := IntentPrompt("start building phase 1", []string{"Phase one: accounts", "Phase two: reports"})
	for _, want := range []string{"START_BUILD", "PAUSE_AUTOPILOT", "1. Phase one: accounts", "2. Phase two: reports", "Classify the intent of this message:\nstart building phase 1"} {
		if !strings.Contains(p, want) {
			t.Errorf("IntentPrompt lacks %q:\n%s", want, p)
		}
	}
}
