package blueprint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

const tasksDoc = "# P\n\n## F: Lockout\n\nThe service MUST lock an account\nafter five failed attempts. A notice is required.\n\n## G: Audit\n\nEvery lock is logged.\n"

func taskJSON(title, excerpt string, deps ...string) string {
	ds := "[]"
	if len(deps) > 0 {
		ds = `["` + strings.Join(deps, `","`) + `"]`
	}
	return fmt.Sprintf(`{"title":%q,"kind":"file_edit","criteria":["it works"],"checks":["true"],"files":[],"dependsOn":%s,"estimate":"S","risk":"low","excerpt":%q}`, title, ds, excerpt)
}

func tasksTree(t *testing.T) (*Doc, *Tree) {
	d := mustParse(t, tasksDoc)
	tr, err := Merge(d, []Found{found(protocol.KindPhase, d, "P", 0), found(protocol.KindFeature, d, "F: Lockout", 0), found(protocol.KindFeature, d, "G: Audit", 0)})
	if err != nil {
		t.Fatal(err)
	}
	return d, tr
}

func TestParseTasksPage(t *testing.T) {
	d, tr := tasksTree(t)
	n := tr.Nodes[1]
	for _, tc := range []struct {
		name, raw, err string
	}{
		{"ok", `{"tasks":[` + taskJSON("Count", "lock an account after five failed") + `],"next":""}`, ""},
		{"excerpt elsewhere", `{"tasks":[` + taskJSON("Log", "Every lock is logged.") + `],"next":""}`, `task 1 ("Log"): its excerpt is not in the node's text`},
		{"same title", `{"tasks":[` + taskJSON("A", "A notice") + `,` + taskJSON("a", "A notice") + `],"next":""}`, `task 2 ("a"): a second task`},
		{"criteria", `{"tasks":[` + strings.Replace(taskJSON("A", "A notice"), `["it works"]`, `[]`, 1) + `],"next":""}`, "no acceptance criteria"},
		{"too many", `{"tasks":[` + taskJSON("A", "A notice") + `,` + taskJSON("B", "A notice") + `,` + taskJSON("C", "A notice") + `],"next":"x"}`, "3 tasks in one answer, at most 2"},
		{"prose", `Here you go`, "not the JSON object"},
		{"file outside", `{"tasks":[` + strings.Replace(taskJSON("A", "A notice"), `"files":[]`, `"files":["src/ok.go","../../home/u/.ssh/id_rsa"]`, 1) + `],"next":""}`, `file "../../home/u/.ssh/id_rsa" is not a path relative to the repository`},
		{"file absolute", `{"tasks":[` + strings.Replace(taskJSON("A", "A notice"), `"files":[]`, `"files":["/etc/passwd"]`, 1) + `],"next":""}`, `file "/etc/passwd" is not a path relative`},
	} {
		got, _, err := ParseTasksPage(d, n, 2, map[string]bool{}, []byte(tc.raw))
		if tc.err == "" {
			if err != nil || len(got) != 1 || tasksDoc[got[0].Excerpt.Start:got[0].Excerpt.End] != "lock an account\nafter five failed" {
				t.Errorf("%s: %+v %v", tc.name, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "tasks of node "+n.ID) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestBuildTasksAndNext: dependencies by title resolve to the node's
// tasks, another node's tasks or a node; unknown names and cycles are kept
// as unresolved; with tasks under it, a node's tasks are the work Next
// offers, in dependency order.
func TestBuildTasksAndNext(t *testing.T) {
	d, tr := tasksTree(t)
	f, g := tr.Nodes[1], tr.Nodes[2]
	audit := BuildTasks(d, tr, g, []TaskFound{{Title: "Log locks", Kind: "file_edit", Excerpt: protocol.ByteRange{Start: g.Start, End: g.End}}}, nil)
	ts := BuildTasks(d, tr, f, []TaskFound{
		{Title: "Count", DependsOn: []string{"Notify"}},
		{Title: "Notify", DependsOn: []string{"Count", "log locks", "G: Audit", "Ghost"}},
	}, audit)
	count, notify := ts[0], ts[1]
	if fmt.Sprint(count.DependsOn) != fmt.Sprint([]string{notify.ID}) {
		t.Fatalf("Count deps %v", count.DependsOn)
	}
	if fmt.Sprint(notify.DependsOn) != fmt.Sprint([]string{audit[0].ID, g.ID}) || fmt.Sprint(notify.Unresolved) != "[Count (would close a cycle) Ghost]" {
		t.Fatalf("Notify deps %v unresolved %v", notify.DependsOn, notify.Unresolved)
	}
	if count.ID != TaskID(f.ID, "count") || count.ID == notify.ID {
		t.Fatal("task ids")
	}
	all := append(ts, audit...)
	wt := WithTasks(tr, all)
	next := func() string {
		p, err := Next(wt, NextOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, x := range p.Tasks {
			s = append(s, x.Node.Title)
		}
		return fmt.Sprint(s)
	}
	if got := next(); got != "[Log locks]" {
		t.Fatalf("Next = %s, want [Log locks] (Count waits for Notify, Notify for Log locks and G)", got)
	}
	for i := range wt.Nodes {
		if wt.Nodes[i].Title == "Log locks" || wt.Nodes[i].ID == g.ID {
			wt.Nodes[i].Status = protocol.NodeDone
		}
	}
	if got := next(); got != "[Notify]" {
		t.Fatalf("Next = %s, want [Notify]", got)
	}
}

func TestRollup(t *testing.T) {
	d, tr := tasksTree(t) // P > F, G
	f, g := tr.Nodes[1], tr.Nodes[2]
	ts := BuildTasks(d, tr, f, []TaskFound{{Title: "a"}, {Title: "b"}}, nil)
	st := func(tr *Tree) string {
		var s []string
		for _, n := range tr.Nodes {
			s = append(s, string(n.Status))
		}
		return fmt.Sprint(s)
	}
	for _, tc := range []struct {
		a, b protocol.NodeStatus
		g    protocol.NodeStatus // G is a leaf without tasks: work itself
		want string
		n    int
	}{
		{"planned", "planned", "planned", "[planned planned planned]", 0},
		{"done", "planned", "planned", "[in_progress in_progress planned]", 2},
		{"done", "done", "planned", "[in_progress done planned]", 2},
		{"done", "done", "done", "[done done done]", 2},
		{"blocked", "planned", "planned", "[blocked blocked planned]", 2},
		{"in_progress", "blocked", "planned", "[in_progress in_progress planned]", 2},
	} {
		c := &Tree{Nodes: append([]protocol.BlueprintNode(nil), tr.Nodes...)}
		c.Nodes[2].Status = tc.g
		ts[0].Status, ts[1].Status = tc.a, tc.b
		changed := Rollup(c, ts)
		if st(c) != tc.want || len(changed) != tc.n {
			t.Errorf("tasks %s,%s G %s: statuses %s (%d changed), want %s (%d)", tc.a, tc.b, tc.g, st(c), len(changed), tc.want, tc.n)
		}
	}
	_ = g
}
