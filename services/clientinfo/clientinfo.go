package clientinfo

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// Service answers the start-up questions of a Codex client that are about
// no thread. Any goroutine may use it.
type Service struct {
	// Cwd is the working directory of a thread started without one
	// (session.Manager.Defaults): the cwd of a request that names none.
	Cwd func() string
}

// ReadAccount implements account/read: apserver calls the configured
// provider itself, so there is no OpenAI account to log in to.
func (c *Service) ReadAccount(_ context.Context, _ protocol.Empty, reply port.Reply) {
	reply(protocol.AccountReadResult{Account: nil, RequiresOpenaiAuth: false}, nil)
}

// ReadConfigRequirements implements configRequirements/read: apserver has
// no administrator requirements.
func (c *Service) ReadConfigRequirements(_ context.Context, _ protocol.Empty, reply port.Reply) {
	reply(protocol.ConfigRequirementsReadResult{Requirements: nil}, nil)
}

// ListSkills implements skills/list: the SKILL.md files under Codex's skill
// locations (~/.codex/skills, ~/.agents/skills, and a workspace's
// .codex/skills, .agents/skills and .apserver/skills), per cwd.
func (c *Service) ListSkills(ctx context.Context, p protocol.CwdsParams, reply port.Reply) {
	cwds := p.Cwds
	if len(cwds) == 0 {
		cwds = []string{c.Cwd()}
	}
	go func() {
		res := protocol.SkillsListResult{Data: make([]protocol.SkillsListEntry, 0, len(cwds))}
		home, _ := os.UserHomeDir()
		codexHome := os.Getenv("CODEX_HOME")
		if codexHome == "" && home != "" {
			codexHome = filepath.Join(home, ".codex")
		}
		for _, cwd := range cwds {
			e := protocol.SkillsListEntry{Cwd: cwd, Skills: []protocol.SkillMetadata{}, Errors: []protocol.SkillError{}}
			var roots []skillRoot
			if codexHome != "" {
				roots = append(roots, skillRoot{filepath.Join(codexHome, "skills"), "user"})
			}
			if home != "" {
				roots = append(roots, skillRoot{filepath.Join(home, ".agents", "skills"), "user"})
			}
			for _, d := range []string{".codex", ".agents", ".apserver"} {
				roots = append(roots, skillRoot{filepath.Join(cwd, d, "skills"), "repo"})
			}
			for _, r := range roots {
				scanSkills(r, &e)
			}
			res.Data = append(res.Data, e)
		}
		reply(res, nil)
	}()
}

type skillRoot struct{ dir, scope string }

// scanSkills adds the skills of root's subdirectories (each with a
// SKILL.md whose front matter names it) to e.
func scanSkills(r skillRoot, e *protocol.SkillsListEntry) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		path := filepath.Join(r.dir, d.Name(), "SKILL.md")
		name, desc, err := skillFrontMatter(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			e.Errors = append(e.Errors, protocol.SkillError{Path: path, Message: err.Error()})
			continue
		}
		if name == "" {
			name = d.Name()
		}
		e.Skills = append(e.Skills, protocol.SkillMetadata{Name: name, Description: desc, Path: path, Scope: r.scope, Enabled: true})
	}
}

// skillFrontMatter reads name and description from a SKILL.md's "---"
// front matter.
func skillFrontMatter(path string) (name, desc string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return "", "", nil
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			name = v
		case "description":
			desc = v
		}
	}
	return name, desc, sc.Err()
}

// ListHooks implements hooks/list: apserver runs no Codex hooks, so each
// cwd has none.
func (c *Service) ListHooks(_ context.Context, p protocol.CwdsParams, reply port.Reply) {
	cwds := p.Cwds
	if len(cwds) == 0 {
		cwds = []string{c.Cwd()}
	}
	res := protocol.HooksListResult{Data: []protocol.HooksListEntry{}}
	for _, c := range cwds {
		res.Data = append(res.Data, protocol.HooksListEntry{Cwd: c, Hooks: []any{}, Errors: []any{}, Warnings: []string{}})
	}
	reply(res, nil)
}

// ListCollaborationModes implements collaborationMode/list: plan mode
// (read-only planning that ends in a <proposed_plan>, planmode.go) and the
// default mode.
func (c *Service) ListCollaborationModes(_ context.Context, _ protocol.Empty, reply port.Reply) {
	plan, def := protocol.ModePlan, protocol.ModeDefault
	reply(protocol.DataResult[protocol.CollaborationModeMask]{Data: []protocol.CollaborationModeMask{
		{Name: "Plan", Mode: &plan}, {Name: "Default", Mode: &def}}}, nil)
}

// CheckBedrockGovCloud implements account/bedrock/checkGovCloudRequirements:
// apserver has no Bedrock login, so nothing is GovCloud.
func (c *Service) CheckBedrockGovCloud(_ context.Context, _ protocol.Empty, reply port.Reply) {
	reply(map[string]bool{"isGovCloud": false, "shouldWarn": false}, nil)
}

// ListInstalledPlugins implements plugin/installed: apserver has no
// plugin marketplaces.
func (c *Service) ListInstalledPlugins(_ context.Context, _ protocol.Empty, reply port.Reply) {
	reply(map[string][]any{"marketplaces": {}, "marketplaceLoadErrors": {}}, nil)
}
