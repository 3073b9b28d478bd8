package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/apserver/apserver/blueprints"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// RegisterBlueprints wires blueprint/* (docs/blueprints.md) to the
// blueprints service. Ingestions of an earlier process are taken up once
// the client has sent initialized, so that their progress reaches a client
// that is ready. Call it after Register.
func RegisterBlueprints(s *Server, svc *blueprints.Service) {
	handleLater(s, protocol.MethodBlueprintIngest, svc.Ingest)
	handleLater(s, protocol.MethodBlueprintList, svc.List)
	handleLater(s, protocol.MethodBlueprintRead, svc.Read)
	handleLater(s, protocol.MethodBlueprintNodeUpdate, svc.NodeUpdate)
	handleLater(s, protocol.MethodBlueprintNext, svc.Next)
	handleLater(s, protocol.MethodBlueprintCoverage, svc.Coverage)
	handleLater(s, protocol.MethodBlueprintDiff, svc.Diff)
	handleLater(s, protocol.MethodBlueprintCancel, svc.Cancel)
	handleLater(s, protocol.MethodBlueprintNodeTasks, svc.NodeTasks)
	handleLater(s, protocol.MethodBlueprintVerify, svc.Verify)
	prev := s.notifHandlers[protocol.MethodInitialized]
	s.notifHandlers[protocol.MethodInitialized] = func(raw json.RawMessage) {
		if prev != nil {
			prev(raw)
		}
		svc.Restore()
	}
}

// handleLater registers a method whose work reads the store: it runs off
// the read loop and is answered when done.
func handleLater[P, R any](s *Server, method string, fn func(context.Context, P) (R, error)) {
	Handle(s, method, func(ctx context.Context, p P, reply session.Reply) {
		go func() {
			r, err := fn(ctx, p)
			if err != nil {
				reply(nil, err)
				return
			}
			reply(r, nil)
		}()
	})
}

// blueprintLane is the lane of a blueprint/* request (see laneOf): they
// are about no thread, and some are long (a model call, the checks of a
// verification), so they keep out of the lane of requests about no thread.
// Blueprint requests are answered in order among themselves, except
// node/tasks and verify, each in a lane of its own so that reads do not
// wait behind them.
func blueprintLane(method string, id jsonrpc2.ID) (string, bool) {
	switch {
	case method == protocol.MethodBlueprintNodeTasks, method == protocol.MethodBlueprintVerify:
		return "\x00" + method + " " + idString(id), true
	case strings.HasPrefix(method, "blueprint/"):
		return "\x00blueprint/", true
	}
	return "", false
}
