package brain

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (review, then -update):\n%s", name, got)
	}
}

// decisions of the small project the tests and the acceptance suite use:
// a Python web service.
func projectDecisions() []protocol.ProjectDecision {
	return []protocol.ProjectDecision{
		{ID: "d-1", Title: "Use PostgreSQL for all persistent data", Text: "Every table lives in PostgreSQL; tests use a throwaway PostgreSQL database.",
			Why: "one database to operate; JSONB and transactional DDL", Alternatives: []string{"MySQL", "SQLite", "MongoDB"},
			Scope:  protocol.DecisionScope{Files: []string{"app/db/**", "migrations/**"}, Tags: []string{"database", "persistence", "storage"}},
			Source: "user", Status: protocol.DecisionActive, CreatedAtMs: 1000, UpdatedAtMs: 1000},
		{ID: "d-2", Title: "FastAPI for the HTTP layer", Text: "The API is served by FastAPI with pydantic models.",
			Alternatives: []string{"Flask", "Django"}, Scope: protocol.DecisionScope{Files: []string{"app/api/**"}, Tags: []string{"api", "http"}},
			Source: "planner", Status: protocol.DecisionActive, CreatedAtMs: 2000, UpdatedAtMs: 2000},
		{ID: "d-3", Title: "Tests run with pytest", Text: "All tests are pytest tests; no unittest classes.",
			Scope:  protocol.DecisionScope{Files: []string{"tests/**"}, Tags: []string{"tests"}},
			Source: "clarification", Status: protocol.DecisionActive, CreatedAtMs: 3000, UpdatedAtMs: 3000},
		{ID: "d-4", Title: "Background jobs with Celery on Redis", Text: "Jobs are Celery tasks; Redis is the broker and the cache.",
			Alternatives: []string{"RQ", "Dramatiq", "RabbitMQ"}, Scope: protocol.DecisionScope{Files: []string{"app/jobs/**"}, Tags: []string{"jobs", "queue", "cache"}},
			Source: "repair", Status: protocol.DecisionActive, CreatedAtMs: 4000, UpdatedAtMs: 4000},
		{ID: "d-5", Title: "Dependencies are pinned in requirements.txt", Text: "Use pip with requirements.txt, not Poetry.",
			Scope:  protocol.DecisionScope{Files: []string{"requirements*.txt", "pyproject.toml"}, Tags: []string{"dependencies"}},
			Source: "user", Status: protocol.DecisionActive, CreatedAtMs: 5000, UpdatedAtMs: 5000},
		{ID: "d-6", Title: "Authentication with JWT bearer tokens", Text: "Stateless JWT bearer tokens; no server-side sessions.",
			Scope:  protocol.DecisionScope{Files: []string{"app/auth/**"}, Tags: []string{"auth", "login", "session"}},
			Source: "model", Status: protocol.DecisionActive, CreatedAtMs: 6000, UpdatedAtMs: 6000},
		{ID: "d-7", Title: "Use MySQL", Text: "Superseded by d-1.", Source: "user", Status: protocol.DecisionSuperseded, SupersededBy: "d-1", CreatedAtMs: 500, UpdatedAtMs: 1000},
		{ID: "d-8", Title: "Vue for the admin UI", Text: "Proposed by the planner.", Source: "planner", Status: protocol.DecisionProposed, CreatedAtMs: 7000, UpdatedAtMs: 7000},
	}
}
