package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/services/threadsearch"
	"github.com/apserver/apserver/session"
	"github.com/sourcegraph/jsonrpc2"
)

// registerCodex171 wires what Codex 0.171 added that its clients call
// (docs/protocol.md, "Codex 0.171"): the cancels of thread/search and
// thread/search/stream (the searches are services/threadsearch's,
// registerSearch), modelProvider/default/set and thread/realtime/list.
func registerCodex171(s *Server, m *session.Manager) {
	registerSearchCancel(s)
	Handle(s, protocol.MethodModelProviderDefaultSet, m.SetDefaultProvider)
	Handle(s, protocol.MethodThreadRealtimeList, m.ListRealtime)
}

// registerSearchCancel wires thread/search/cancel and
// thread/search/stream/cancel: each stops only a search of its own method.
func registerSearchCancel(s *Server) {
	Handle(s, protocol.MethodThreadSearchCancel, func(_ context.Context, p protocol.ThreadSearchCancelParams, reply session.Reply) {
		s.cancelSearch(protocol.MethodThreadSearch, p.RequestID)
		reply(struct{}{}, nil)
	})
	Handle(s, protocol.MethodThreadSearchStreamCancel, func(_ context.Context, p protocol.ThreadSearchCancelParams, reply session.Reply) {
		s.cancelSearch(protocol.MethodThreadSearchStream, p.RequestID)
		reply(struct{}{}, nil)
	})
}

// requestIDKey is the context key under which a search finds its own
// request id (for thread/search/partial's requestId).
type requestIDKey struct{}

// searchLane puts each search (and each cancel) in a lane of its own: a
// search runs until it has scanned enough threads, and neither its cancel
// nor any other request about no thread waits behind it.
func searchLane(method string, id jsonrpc2.ID) (string, bool) {
	switch method {
	case protocol.MethodThreadSearch, protocol.MethodThreadSearchStream,
		protocol.MethodThreadSearchCancel, protocol.MethodThreadSearchStreamCancel:
		return "\x00" + method + " " + idString(id), true
	}
	return "", false
}

// cancelSearch stops the unanswered request requestID of this connection
// if it is a search of the given method; anything else, or a search
// already answered, is left alone (the cancel is idempotent).
func (s *Server) cancelSearch(method string, requestID json.RawMessage) {
	id, kind := parseID(requestID)
	if kind != idValid {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range s.inflight[id] {
		if rs.method == method {
			rs.cancel()
		}
	}
}

// searchAnswer maps a cancelled search to a request error that says so.
func searchAnswer(res protocol.ThreadSearchResult, err error) (any, error) {
	if errors.Is(err, session.ErrSearchCancelled) {
		return nil, protocol.Errorf(protocol.ErrInvalidRequest, "thread search cancelled")
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// registerSearch wires thread/search and thread/search/stream, with its
// thread/search/partial notifications, to ts.
func registerSearch(s *Server, ts *threadsearch.Service) {
	Handle(s, protocol.MethodThreadSearch, func(ctx context.Context, p protocol.ThreadSearchParams, reply session.Reply) {
		go func() { reply(searchAnswer(ts.Search(ctx, p, nil))) }()
	})
	Handle(s, protocol.MethodThreadSearchStream, func(ctx context.Context, p protocol.ThreadSearchParams, reply session.Reply) {
		rid, _ := ctx.Value(requestIDKey{}).(jsonrpc2.ID) // set by handleRequest (searchLane)
		id, _ := json.Marshal(rid)
		c := s.Client()
		go func() {
			reply(searchAnswer(ts.Search(ctx, p, func(batch []protocol.ThreadSearchMatch) {
				c.Notify(protocol.NotifyThreadSearchPartial, protocol.ThreadSearchPartialNotification{RequestID: id, Data: batch})
			})))
		}()
	})
}
