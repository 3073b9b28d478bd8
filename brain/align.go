package brain

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// Task is the scope of the work an action belongs to: its text (title,
// description, acceptance), the files it may touch (globs; none means
// any) and its blueprint nodes.
type Task struct {
	ID    string   `json:"id,omitempty"`
	Title string   `json:"title,omitempty"`
	Text  string   `json:"text,omitempty"`
	Files []string `json:"files,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
}

func (t Task) mentions(words ...string) bool {
	text := strings.ToLower(t.Title + "\n" + t.Text)
	for _, w := range words {
		if w != "" && strings.Contains(text, strings.ToLower(w)) {
			return true
		}
	}
	return false
}

func (t Task) name() string {
	if t.ID == "" {
		return "the task"
	}
	return "task " + t.ID
}

// stance is what one active decision says about technologies.
type stance struct {
	d        protocol.ProjectDecision
	chosen   map[int]bool
	rejected map[int]bool
	cats     map[string]bool
}

// negations introduce what a decision rules out ("not MySQL", "instead of
// SQLite", "avoid Redux").
var negations = map[string]bool{"not": true, "no": true, "never": true, "avoid": true, "instead": true, "without": true, "rather": true, "drop": true, "don't": true, "against": true}

func stanceOf(d protocol.ProjectDecision) stance {
	s := stance{d: d, chosen: map[int]bool{}, rejected: map[int]bool{}, cats: map[string]bool{}}
	for _, alt := range d.Alternatives {
		for _, i := range techsIn(alt, false) {
			s.rejected[i] = true
		}
	}
	words := strings.Fields(strings.ToLower(d.Title + " . " + d.Text))
	for i, w := range words {
		if !negations[strings.Trim(w, ",.;:()")] {
			continue
		}
		end := i + 4
		if end > len(words) {
			end = len(words)
		}
		for _, t := range techsIn(strings.Join(words[i+1:end], " "), true) {
			s.rejected[t] = true
		}
	}
	for _, t := range techsIn(d.Title+"\n"+d.Text, true) {
		if !s.rejected[t] {
			s.chosen[t] = true
			s.cats[techs[t].category] = true
		}
	}
	return s
}

// finding is one rule's result.
type finding struct {
	status   protocol.AlignmentStatus
	score    float64
	reason   string
	decision *protocol.ProjectDecision
}

// mention is a technology an action brings in or takes out, and how.
type mention struct {
	tech int
	how  string // "adds", "removes", "writes", "runs"
	what string // the package or text that names it
}

// Check is the alignment first pass: deterministic rules over the action,
// the task and the active decisions (see docs/brain.md). It returns
// aligned, risky or conflicting when its rules settle the action, and
// undecided when the action touches a decision's scope in a way the rules
// cannot read (the validator model's turn).
func Check(a protocol.AlignmentAction, task Task, decisions []protocol.ProjectDecision) protocol.AlignmentVerdict {
	var stances []stance
	for _, d := range decisions {
		if d.Status == protocol.DecisionActive {
			stances = append(stances, stanceOf(d))
		}
	}
	var fs []finding
	var ms []mention
	var deps DepChange
	touched := ""
	prose := false
	switch a.Kind {
	case protocol.ActionWrite, protocol.ActionDelete:
		touched = path.Clean(strings.TrimPrefix(a.Path, "./"))
		if len(task.Files) > 0 && !MatchAny(task.Files, touched) {
			fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.4,
				reason: fmt.Sprintf("%s is outside the files of %s (%s)", touched, task.name(), strings.Join(task.Files, ", "))})
		}
		if a.Kind == protocol.ActionDelete {
			if !task.mentions("delete", "remove", "drop", "clean", path.Base(touched)) {
				fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.35,
					reason: fmt.Sprintf("deletes %s, which %s does not mention", touched, task.name())})
			}
			if IsManifest(touched) {
				d, _ := ManifestDeps(touched, a.Before)
				deps.Removed = d
			}
			break
		}
		if IsManifest(touched) {
			ch, ok := ManifestDiff(touched, a.Before, a.After)
			if !ok {
				fs = append(fs, finding{status: protocol.AlignmentUndecided, score: 0.5,
					reason: fmt.Sprintf("%s cannot be read as a manifest", touched)})
			}
			deps = ch
		} else {
			ext := path.Ext(touched)
			prose = ext == ".md" || ext == ".txt" || ext == ".rst" || ext == ""
			for _, t := range techsIn(addedLines(a.Before, a.After), true) {
				ms = append(ms, mention{tech: t, how: "writes", what: touched})
			}
			for _, t := range techsIn(touched, true) {
				ms = append(ms, mention{tech: t, how: "writes", what: touched})
			}
		}
		if isMigration(touched, a.After) && !task.mentions("migrat", "schema") {
			fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.35,
				reason: fmt.Sprintf("writes a migration (%s), which %s does not mention", touched, task.name())})
		}
	case protocol.ActionCommand:
		if ReadOnly(a.Command) {
			v := verdict(nil, nil, task)
			v.Score, v.Reasons = 1, []string{"the command only reads"}
			return v
		}
		deps = CommandDeps(a.Command)
		for _, tool := range deps.Tools {
			for _, t := range techsIn(tool, false) {
				ms = append(ms, mention{tech: t, how: "installs with", what: tool})
			}
		}
		installed := map[string]bool{}
		for _, p := range append(append([]string(nil), deps.Added...), deps.Removed...) {
			installed[p] = true
		}
		var rest []string
		for _, seg := range Segments(a.Command) {
			for _, w := range seg {
				if !installed[strings.ToLower(w)] {
					rest = append(rest, w)
				}
			}
		}
		for _, t := range techsIn(strings.Join(rest, " "), true) {
			ms = append(ms, mention{tech: t, how: "runs", what: a.Command})
		}
		for _, seg := range Segments(a.Command) {
			if r := destructive(seg); r != "" && !task.mentions("delete", "remove", "drop", "clean", "reset") {
				fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.35,
					reason: fmt.Sprintf("%s, which %s does not mention", r, task.name())})
			}
			if isMigrationCommand(seg) && !task.mentions("migrat", "schema") {
				fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.35,
					reason: fmt.Sprintf("runs a migration (%s), which %s does not mention", strings.Join(seg, " "), task.name())})
			}
		}
	}
	for _, p := range deps.Added {
		ts := techsIn(p, false)
		for _, t := range ts {
			ms = append(ms, mention{tech: t, how: "adds", what: p})
		}
		if len(ts) == 0 && !task.mentions(p) {
			fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.4,
				reason: fmt.Sprintf("adds the dependency %s, which %s does not mention", p, task.name())})
		}
	}
	for _, p := range deps.Removed {
		ts := techsIn(p, false)
		for _, t := range ts {
			ms = append(ms, mention{tech: t, how: "removes", what: p})
		}
		if len(ts) == 0 && !task.mentions(p) {
			fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.4,
				reason: fmt.Sprintf("removes the dependency %s, which %s does not mention", p, task.name())})
		}
	}
	var supporting []*protocol.ProjectDecision
	for _, m := range ms {
		t := techs[m.tech]
		decided := false
		for i := range stances {
			s := &stances[i]
			opposite := s.rejected[m.tech] || (s.cats[t.category] && !s.chosen[m.tech])
			switch {
			case m.how == "removes" && s.chosen[m.tech]:
				fs = append(fs, finding{status: protocol.AlignmentConflicting, score: 0.05, decision: &s.d,
					reason: fmt.Sprintf("removes %s (%s), which decision %s %q chose", m.what, t.name, s.d.ID, s.d.Title)})
			case m.how == "removes":
			case opposite && (m.how == "adds" || m.how == "installs with" || (m.how == "writes" && !prose)):
				fs = append(fs, finding{status: protocol.AlignmentConflicting, score: 0.05, decision: &s.d,
					reason: fmt.Sprintf("%s %s (%s), against decision %s %q%s", m.how, m.what, t.name, s.d.ID, s.d.Title, chose(s))})
			case opposite && m.how == "writes":
				fs = append(fs, finding{status: protocol.AlignmentUndecided, score: 0.5, decision: &s.d,
					reason: fmt.Sprintf("%s names %s in prose; decision %s %q%s", m.what, t.name, s.d.ID, s.d.Title, chose(s))})
			case opposite:
				fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.3, decision: &s.d,
					reason: fmt.Sprintf("%s %s, which names %s, against decision %s %q%s", m.how, m.what, t.name, s.d.ID, s.d.Title, chose(s))})
			case s.chosen[m.tech]:
				supporting = append(supporting, &s.d)
			default:
				continue
			}
			decided = true
		}
		if !decided && m.how == "adds" && !task.mentions(m.what, t.name) {
			fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.4,
				reason: fmt.Sprintf("adds the dependency %s (%s), which %s does not mention", m.what, t.name, task.name())})
		}
		if !decided && m.how == "removes" && !task.mentions(m.what, t.name) {
			fs = append(fs, finding{status: protocol.AlignmentRisky, score: 0.4,
				reason: fmt.Sprintf("removes the dependency %s (%s), which %s does not mention", m.what, t.name, task.name())})
		}
	}
	// Undecided: the action lies in a decision's scope (its files, its
	// tags), no rule above read it, and it is not plainly a supported one.
	if len(fs) == 0 && len(supporting) == 0 {
		text := strings.ToLower(a.Command + " " + touched + " " + addedLines(a.Before, a.After))
		for i := range stances {
			s := &stances[i]
			hit := touched != "" && MatchAny(s.d.Scope.Files, touched)
			for _, tag := range s.d.Scope.Tags {
				if tag != "" && containsWord(text, strings.ToLower(tag)) {
					hit = true
				}
			}
			if hit {
				fs = append(fs, finding{status: protocol.AlignmentUndecided, score: 0.5, decision: &s.d,
					reason: fmt.Sprintf("touches the scope of decision %s %q; the rules cannot tell whether it follows it", s.d.ID, s.d.Title)})
			}
		}
	}
	return verdict(fs, supporting, task)
}

func chose(s *stance) string {
	var names []string
	for t := range s.chosen {
		names = append(names, techs[t].name)
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return ", which chose " + strings.Join(names, ", ")
}

func verdict(fs []finding, supporting []*protocol.ProjectDecision, task Task) protocol.AlignmentVerdict {
	v := protocol.AlignmentVerdict{Status: protocol.AlignmentAligned, Score: 0.9, Reasons: []string{}, Decisions: []protocol.DecisionRef{}, Pass: "rules"}
	rank := map[protocol.AlignmentStatus]int{protocol.AlignmentAligned: 0, protocol.AlignmentUndecided: 1, protocol.AlignmentRisky: 2, protocol.AlignmentConflicting: 3}
	seen := map[string]bool{}
	ref := func(d *protocol.ProjectDecision) {
		if d != nil && !seen[d.ID] {
			seen[d.ID] = true
			v.Decisions = append(v.Decisions, protocol.DecisionRef{ID: d.ID, Title: d.Title})
		}
	}
	seenReason := map[string]bool{}
	for _, f := range fs {
		if rank[f.status] > rank[v.Status] {
			v.Status = f.status
		}
		if f.score < v.Score {
			v.Score = f.score
		}
		if !seenReason[f.reason] {
			seenReason[f.reason] = true
			v.Reasons = append(v.Reasons, f.reason)
		}
		ref(f.decision)
	}
	if len(fs) == 0 {
		if len(supporting) > 0 {
			v.Score = 1
			v.Reasons = append(v.Reasons, fmt.Sprintf("follows decision %s %q", supporting[0].ID, supporting[0].Title))
		} else {
			v.Reasons = append(v.Reasons, "no rule applies")
		}
	}
	for _, d := range supporting {
		ref(d)
	}
	v.Nodes = append(v.Nodes, task.Nodes...)
	return v
}

// addedLines returns the lines of after that are not lines of before.
func addedLines(before, after string) string {
	old := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		old[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(after, "\n") {
		if !old[l] {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func containsWord(text, w string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], w)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(w)
		if (s == 0 || !isWordByte(text[s-1])) && (e == len(text) || !isWordByte(text[e])) {
			return true
		}
		i = s + 1
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// isMigration reports whether a written file is a schema migration.
func isMigration(p, text string) bool {
	lp := strings.ToLower(p)
	if strings.Contains(lp, "migrations/") || strings.Contains(lp, "migrate/") || strings.Contains(lp, "alembic/versions/") {
		return true
	}
	if path.Ext(lp) == ".sql" {
		t := strings.ToLower(text)
		return strings.Contains(t, "alter table") || strings.Contains(t, "drop table") || strings.Contains(t, "create table")
	}
	return false
}

func isMigrationCommand(seg []string) bool {
	j := strings.ToLower(strings.Join(seg, " "))
	for _, m := range []string{"manage.py migrate", "alembic upgrade", "alembic downgrade", "prisma migrate", "db:migrate", "goose up", "goose down", "migrate -path", "sequelize db:migrate", "knex migrate"} {
		if strings.Contains(j, m) {
			return true
		}
	}
	return false
}

// destructive names what a simple command destroys, "" if nothing.
func destructive(seg []string) string {
	if len(seg) == 0 {
		return ""
	}
	j := strings.ToLower(strings.Join(seg, " "))
	switch {
	case seg[0] == "rm" || seg[0] == "rmdir" || seg[0] == "shred" || seg[0] == "unlink":
		return "deletes " + strings.Join(seg[1:], " ")
	case strings.HasPrefix(j, "git rm"):
		return "deletes " + strings.Join(seg[2:], " ") + " from git"
	case strings.HasPrefix(j, "git reset --hard"), strings.HasPrefix(j, "git clean"), strings.HasPrefix(j, "git checkout -- "):
		return "discards work (" + j + ")"
	case strings.HasPrefix(j, "git push") && (strings.Contains(j, "--force") || strings.Contains(j, " -f")):
		return "force-pushes"
	case strings.Contains(j, "drop table") || strings.Contains(j, "drop database") || strings.Contains(j, "truncate table"):
		return "drops data (" + j + ")"
	}
	return ""
}
