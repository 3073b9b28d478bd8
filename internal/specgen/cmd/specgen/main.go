// Command specgen writes a generated specification and the scripted
// planner's answers for it, for measuring `apserver blueprint ingest`
// against `apserver fake-model --script`:
//
//	go run ./internal/specgen/cmd/specgen -out /tmp/spec   # spec.md, script.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/internal/specgen"
)

func main() {
	out := flag.String("out", ".", "directory to write spec.md and script.json to")
	seed := flag.Uint64("seed", 1, "seed")
	small := flag.Bool("small", false, "a few thousand words instead of ~500,000")
	budget := flag.Int("chunk-tokens", 0, "chunk budget the answers are cut for (default 12000)")
	flag.Parse()
	shape := specgen.Large
	if *small {
		shape = specgen.Small
	}
	sp := specgen.Generate(*seed, shape)
	d, err := blueprint.Parse(sp.Text)
	if err != nil {
		fail(err)
	}
	sc := specgen.Script(sp.Answers(d, *budget, 0))
	b, err := json.Marshal(sc)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "spec.md"), []byte(sp.Text), 0o644); err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "script.json"), b, 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("%d words, %d bytes, %d nodes, %d answers\n", sp.Words, len(sp.Text), len(sp.Nodes), len(sc.Rules))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "specgen:", err)
	os.Exit(1)
}
