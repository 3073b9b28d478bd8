package brain

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func TestManifestDiff(t *testing.T) {
	cases := []struct {
		path, before, after string
		added, removed      []string
	}{
		{"requirements.txt", "fastapi==0.1\n# db\npsycopg2-binary>=2.9 ; python_version>'3'\n", "fastapi==0.1\nmysql-connector-python[dns]==8\n", []string{"mysql-connector-python"}, []string{"psycopg2-binary"}},
		{"requirements-dev.txt", "", "-r requirements.txt\npytest\n", []string{"pytest"}, nil},
		{"package.json", `{"dependencies":{"pg":"^8"}}`, `{"dependencies":{"pg":"^8"},"devDependencies":{"better-sqlite3":"^9"}}`, []string{"better-sqlite3"}, nil},
		{"go.mod", "module x\n\nrequire github.com/lib/pq v1.10.0\n", "module x\n\nrequire (\n\tgithub.com/go-sql-driver/mysql v1.7.1 // indirect\n)\n", []string{"github.com/go-sql-driver/mysql"}, []string{"github.com/lib/pq"}},
		{"Cargo.toml", "[package]\nname = \"x\"\n\n[dependencies]\ntokio-postgres = \"0.7\"\n", "[package]\nname = \"x\"\n\n[dependencies]\ntokio-postgres = \"0.7\"\n\n[dev-dependencies.rusqlite]\nversion = \"0.31\"\n", []string{"rusqlite"}, nil},
		{"pyproject.toml", "[project]\ndependencies = [\"fastapi\"]\n", "[project]\ndependencies = [\n  \"fastapi\",\n  \"PyMySQL>=1\",\n]\n", []string{"pymysql"}, nil},
		{"pyproject.toml", "[tool.poetry.dependencies]\npython = \"^3.12\"\n", "[tool.poetry.dependencies]\npython = \"^3.12\"\nmotor = \"^3\"\n", []string{"motor"}, nil},
	}
	for _, c := range cases {
		got, ok := ManifestDiff(c.path, c.before, c.after)
		if !ok || !reflect.DeepEqual(got.Added, c.added) || !reflect.DeepEqual(got.Removed, c.removed) {
			t.Errorf("ManifestDiff(%s) = %+v %v, want +%v -%v", c.path, got, ok, c.added, c.removed)
		}
	}
	if _, ok := ManifestDiff("package.json", "{", "{}"); ok {
		t.Error("ManifestDiff read a package.json that is not JSON")
	}
}

func TestCommandDeps(t *testing.T) {
	cases := []struct {
		cmd            string
		added, removed []string
	}{
		{"cd app && sudo pip install -U 'mysql-connector-python==8.3' requests", []string{"mysql-connector-python", "requests"}, nil},
		{"npm i --save-dev @prisma/client@5 ; yarn remove mongoose", []string{"@prisma/client"}, []string{"mongoose"}},
		{"go get github.com/mattn/go-sqlite3@v1.14.22", []string{"github.com/mattn/go-sqlite3"}, nil},
		{".venv/bin/pip install pymongo", []string{"pymongo"}, nil},
		{"pytest -q", nil, nil},
	}
	for _, c := range cases {
		got := CommandDeps(c.cmd)
		if !reflect.DeepEqual(got.Added, c.added) || !reflect.DeepEqual(got.Removed, c.removed) {
			t.Errorf("CommandDeps(%q) = %+v, want +%v -%v", c.cmd, got, c.added, c.removed)
		}
	}
}

func TestCheckNamesTheDecision(t *testing.T) {
	task := Task{ID: "t-1", Title: "Orders", Files: []string{"app/**", "requirements.txt"}}
	v := Check(protocol.AlignmentAction{Kind: protocol.ActionWrite, Path: "requirements.txt", Before: "fastapi\n", After: "fastapi\nmysql-connector-python\n"}, task, projectDecisions())
	if v.Status != protocol.AlignmentConflicting || len(v.Decisions) != 1 || v.Decisions[0].ID != "d-1" || !strings.Contains(v.Reasons[0], `d-1 "Use PostgreSQL`) {
		t.Fatalf("Check = %+v, want conflicting naming d-1", v)
	}
	// A revoked decision no longer stops anything.
	ds := projectDecisions()
	ds[0].Status = protocol.DecisionRevoked
	if v := Check(protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: "pip install pymysql"}, Task{Text: "use pymysql"}, ds); v.Status != protocol.AlignmentAligned {
		t.Fatalf("Check with d-1 revoked = %+v, want aligned", v)
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pat, p string
		want   bool
	}{
		{"app/db/**", "app/db/x/y.py", true}, {"app/db/**", "app/api/y.py", false}, {"*.sql", "db/m/1.sql", true},
		{"requirements*.txt", "requirements-dev.txt", true}, {"app/*.py", "app/x/y.py", false}, {"**/test_*.py", "tests/a/test_b.py", true},
		{"docs/", "docs/a/b.md", true},
	}
	for _, c := range cases {
		if got := Match(c.pat, c.p); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pat, c.p, got, c.want)
		}
	}
}

func TestJudgeRetriesOnceThenStops(t *testing.T) {
	ds := projectDecisions()
	a := protocol.AlignmentAction{Kind: protocol.ActionWrite, Path: "app/db/pool.py", After: "POOL = 3\n"}
	task := Task{ID: "t-1", Files: []string{"app/**"}}
	var prompts []string
	answers := []string{`{"status":"fine"}`, "```json\n{\"status\":\"aligned\",\"score\":0.9,\"reasons\":[\"ok\"],\"decisions\":[\"d-1\"]}\n```"}
	v := Judge(a, task, ds, func(p string) (string, error) { prompts = append(prompts, p); return answers[len(prompts)-1], nil })
	if len(prompts) != 2 || !strings.Contains(prompts[1], "previous answer was not valid") || v.Status != protocol.AlignmentAligned || v.Pass != "validator" {
		t.Fatalf("Judge = %+v after %d prompts", v, len(prompts))
	}
	prompts = nil
	answers = []string{`{"status":"risky","score":0.3,"reasons":["x"],"decisions":[]}`, `{"status":"risky","score":0.3,"reasons":["x"],"decisions":["d-99"]}`}
	v = Judge(a, task, ds, func(p string) (string, error) { prompts = append(prompts, p); return answers[len(prompts)-1], nil })
	if len(prompts) != 2 || v.Status != protocol.AlignmentRisky || !strings.Contains(strings.Join(v.Reasons, " "), `"d-99" is not an active decision`) {
		t.Fatalf("Judge with two bad answers = %+v", v)
	}
	v = Judge(a, task, ds, func(string) (string, error) { return "", errors.New("model down") })
	if v.Status != protocol.AlignmentRisky || !strings.Contains(strings.Join(v.Reasons, " "), "model down") {
		t.Fatalf("Judge with a failing model = %+v", v)
	}
}
