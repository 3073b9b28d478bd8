package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/protocol"
)

// runBlueprintBuild is `apserver blueprint build NODE [flags]`: `apserver
// run` started from a node of a blueprint (its tasks are the run's plan;
// docs/runs.md, "Runs from a blueprint"). The flags are apserver run's.
func runBlueprintBuild(args []string) error {
	// NODE is a node id (n_…), before or after the flags.
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "n_") })
	if i < 0 {
		fmt.Fprint(os.Stderr, `Usage: apserver blueprint build NODE [flags]

Starts a run from a node of the newest blueprint of this directory (or
--blueprint ID): the tasks of the node and of the nodes under it (asked of
the planner for the node when none exist yet) are the run's plan; each task
validated and committed becomes done in the blueprint, with its commit. The
flags and exit codes are those of apserver run (apserver run --help).
NODE is a node id (n_…; apserver blueprint show lists them).
`)
		return errUsage
	}
	rest := append(slices.Clone(args[:i]), args[i+1:]...)
	return runRun(append([]string{"--node", args[i]}, rest...))
}

// linkBlueprints fills p.Blueprint for a run started from a node: the
// blueprint bpID, else the newest of cwd (bs is the headless runner's
// blueprints service, openRunEnv).
func linkBlueprints(ctx context.Context, bs *blueprints.Service, p *protocol.RunStartParams, cwd, bpID, node string) error {
	id, err := pickBlueprint(ctx, bs, cwd, bpID)
	if err != nil {
		return err
	}
	p.Blueprint = &protocol.RunBlueprintParams{BlueprintID: id, NodeID: node}
	return nil
}
