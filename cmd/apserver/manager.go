package main

import (
	"log/slog"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/projects"
	"github.com/apserver/apserver/runner"
	"github.com/apserver/apserver/server"
	"github.com/apserver/apserver/session"
)

// newProjects makes the manager's driver (docs/manager.md) over the
// runner and the blueprints service; its notifications go to c.
func newProjects(mgr *session.Manager, rn *runner.Runner, bs *blueprints.Service, c interface{ Notify(string, any) }, log *slog.Logger) *projects.Service {
	return projects.New(projects.Options{Store: mgr.Store, Runs: server.RunnerRuns{Runner: rn}, Blueprints: bs, Notify: c.Notify, Log: log})
}
