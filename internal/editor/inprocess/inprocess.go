// Package inprocess runs apserver inside the calling process: server.Run
// over a pair of pipes, with a real session Manager and its SQLite store,
// wired as `apserver serve` wires them. A fake editor (internal/editor)
// drives it where no process boundary is under test, so that what runs is
// covered by `go test -cover`. Stdio framing, kill -9, exit codes and
// flags stay with tests of the real binary.
//
// It sits above server and session, like cmd/apserver; only tests import
// it.
package inprocess

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/editor"
	"github.com/apserver/apserver/server"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/store"
)

// Options configure an in-process server.
type Options struct {
	// Config is the server's configuration (config.Load's); its DataDir
	// holds the store and must be set.
	Config config.Config
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// OnEOF is what the end of the input does to running turns.
	OnEOF session.EOFMode
	// Clock is the session's clock; nil is the real one.
	Clock session.Clock
	// ConfigSources are what config/read reports as the layers read.
	ConfigSources session.ConfigSources
	// Version is the server's version ("dev" when empty).
	Version string
	// NoCoalesce sends every model delta as its own notification.
	NoCoalesce bool
	// Cwd stands for the server process's working directory: a thread
	// started without a cwd works there. Empty: the test's own.
	Cwd string
}

// Server is apserver running in this process.
type Server struct {
	// Manager is the session behind the connection.
	Manager *session.Manager

	in   *io.PipeWriter // the server's input
	out  *io.PipeReader // the server's output
	done chan struct{}
	err  error
}

// Start starts the server; it runs until its input is closed and the work
// in flight is drained (Options.OnEOF), or ctx ends.
func Start(ctx context.Context, o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &Server{in: inW, out: outR, done: make(chan struct{})}
	dataDir := o.Config.DataDir
	var mgr *session.Manager
	srv := server.New(inR, outW, server.Options{
		MaxLineBytes:  o.Config.MaxLineBytes,
		Logger:        log,
		ServerInfo:    server.ServerInfo{Name: "apserver", Version: version, Home: dataDir},
		OnInputEnd:    func(ctx context.Context) error { return mgr.Drain(ctx, o.OnEOF) },
		OnInputClosed: func() { mgr.InputClosed(o.OnEOF) },
	})
	mgr = session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) {
			return store.Open(filepath.Join(dataDir, store.FileName), store.Options{})
		},
		Config:         o.Config,
		Client:         srv.Client(),
		Logger:         log,
		Version:        version,
		DataDir:        dataDir,
		CoalesceDeltas: !o.NoCoalesce,
		ConfigSources:  o.ConfigSources,
		Clock:          o.Clock,
		Cwd:            o.Cwd,
	})
	server.Register(srv, mgr)
	server.RegisterServices(srv, server.NewServices(mgr))
	s.Manager = mgr
	go func() {
		defer close(s.done)
		err := srv.Run(ctx)
		if cerr := mgr.Close(); cerr != nil && err == nil {
			err = cerr
		}
		s.err = err
		inR.Close()
		outW.Close()
	}()
	return s
}

// Input is the server's input: what the editor writes. Closing it is the
// end of the input (stdin's EOF).
func (s *Server) Input() io.WriteCloser { return s.in }

// Output is the server's output: what the editor reads.
func (s *Server) Output() io.Reader { return s.out }

// Done is closed when the server has stopped and its session is closed.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is the server's error once Done is closed (nil for a clean end).
func (s *Server) Err() error {
	<-s.done
	return s.err
}

// Editor connects a fake editor to the server.
func (s *Server) Editor(o editor.Options) *editor.Editor {
	return editor.New(s.in, s.out, o)
}
