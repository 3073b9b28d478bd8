package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/apserver/apserver/model/scripted"
)

// Expect is a scenario's expect.json: how the run must end.
type Expect struct {
	Action        string `json:"action"`
	StopCondition string `json:"stopCondition"`
	Turns         int    `json:"turns"`
}

// Case is one scenario file read for a runner: its archive (to update the
// golden decisions), the model's script, and the parameters each runner
// decodes into its own types.
type Case struct {
	Archive Archive
	Script  scripted.Script
	// Start is start.json (fullAuto/start's params without threadId);
	// Thread is thread.json, or nil (the runner's defaults).
	Start, Thread json.RawMessage
	Expect        Expect
	Config        string            // config.toml, or ""
	Answers       map[string]string // the answers section: method → result, or "none"
}

// Load reads the scenario at path and writes its workspace files into cwd.
func Load(path, cwd string) (Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Case{}, err
	}
	c := Case{Archive: ParseArchive(string(raw))}
	must := func(name string) (string, error) {
		s, ok := c.Archive.Get(name)
		if !ok {
			return "", fmt.Errorf("%s: no %q section", path, name)
		}
		return s, nil
	}
	script, err := must("script.json")
	if err != nil {
		return Case{}, err
	}
	if c.Script, err = scripted.LoadScript(strings.NewReader(script)); err != nil {
		return Case{}, fmt.Errorf("%s: script.json: %w", path, err)
	}
	start, err := must("start.json")
	if err != nil {
		return Case{}, err
	}
	c.Start = json.RawMessage(start)
	expect, err := must("expect.json")
	if err != nil {
		return Case{}, err
	}
	if err := json.Unmarshal([]byte(expect), &c.Expect); err != nil {
		return Case{}, fmt.Errorf("%s: expect.json: %w", path, err)
	}
	if s, ok := c.Archive.Get("thread.json"); ok {
		c.Thread = json.RawMessage(s)
	}
	c.Config, _ = c.Archive.Get("config.toml")
	c.Answers = c.Archive.Answers()
	if err := c.Archive.WriteWorkspace(cwd); err != nil {
		return Case{}, err
	}
	return c, nil
}
