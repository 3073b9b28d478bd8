package session

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apserver/apserver/session/port"
)

// ErrNoClient is wrapped by ClientCall.Wait once the client's input has
// ended: nobody is left to answer the request. A thread answers it itself
// (request.go: an approval is cancelled and the turn stops).
var ErrNoClient = errors.New("no client to answer: its input has ended")

// Reply answers one client request. It is called exactly once, by the
// goroutine that owns the state the request touched, so that the response
// is queued before any notification that must follow it. result is marshalled
// as the JSON-RPC result; a non-nil err becomes a JSON-RPC error whose code
// the server picks from the protocol sentinels the error wraps. It is the
// port's type (port.Reply), so that the layers above session answer their
// own methods without importing session.
type Reply = port.Reply

// Client is the editor at the other end of the connection, as the session
// sees it. The server package implements it.
type Client interface {
	// Notify queues a notification. The order of calls (together with
	// Reply calls) is the order on the wire. It never blocks on the client.
	Notify(method string, params any)
	// Call sends a server→client request and returns at once.
	Call(method string, params any) ClientCall
}

// ThreadClient is a Client that routes notifications by thread (the
// server's Hub, for several connections): the session names the thread a
// notification is about ("" for none), so the client need not read it
// back out of the params.
type ThreadClient interface {
	Client
	NotifyThread(threadID, method string, params any)
}

// ClientCall is one server→client request in flight.
type ClientCall interface {
	// ID is the request's JSON-RPC id: integers from 0, one counter per
	// connection.
	ID() int64
	// Wait blocks until the client answers, ctx ends, or the connection
	// closes. On a JSON-RPC error answer it returns a *protocol.RPCError.
	Wait(ctx context.Context) (json.RawMessage, error)
}
