package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/server"
)

// listenFlags choose the transport of serve (docs/configuration.md).
type listenFlags struct {
	listen, wsAuth, tokenFile, tokenSHA string
	origins                             []string
}

func (l *listenFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.listen, "listen", "stdio://", "stdio://, ws://IP:PORT or unix://[PATH] (WebSocket; several clients)")
	fs.StringVar(&l.wsAuth, "ws-auth", "", "WebSocket auth: capability-token (required for a non-loopback address) or none (loopback only); "+
		"by default a loopback ws:// listener makes a token in <data dir>/ws-token")
	fs.StringVar(&l.tokenFile, "ws-token-file", "", "file holding the capability token clients send as Authorization: Bearer")
	fs.StringVar(&l.tokenSHA, "ws-token-sha256", "", "hex SHA-256 of the capability token (instead of --ws-token-file)")
	fs.Func("ws-allow-origin", "a browser Origin allowed to connect (repeatable; * for any); by default any Origin is refused", func(v string) error {
		l.origins = append(l.origins, v)
		return nil
	})
}

// runListener serves ws:// or unix:// until SIGINT or SIGTERM: one session
// shared by every connection (server.Hub).
func runListener(ctx context.Context, cfg config.Config, f *serveFlags, lf *listenFlags, log *slog.Logger) error {
	dataDir, err := resolveDataDir(cfg)
	if err != nil {
		return err
	}
	ep, err := server.ParseListen(lf.listen, filepath.Join(dataDir, "apserver.sock"))
	if err != nil {
		return err
	}
	var token []byte
	switch lf.wsAuth {
	case "", "none":
		if lf.tokenFile != "" || lf.tokenSHA != "" {
			return errors.New("--ws-token-file and --ws-token-sha256 need --ws-auth capability-token")
		}
		if !ep.Loopback() {
			return fmt.Errorf("--listen %s is reachable from other machines: use --ws-auth capability-token", lf.listen)
		}
		if lf.wsAuth == "" && ep.Network != "unix" {
			// Any local process (other users of the machine among them)
			// can reach a loopback port: a token is required unless the
			// user opts out. A unix socket is 0600 instead.
			path := filepath.Join(dataDir, "ws-token")
			if err := ensureTokenFile(path); err != nil {
				return err
			}
			if token, err = server.TokenHash(path, ""); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "apserver: capability token in %s (clients send it as Authorization: Bearer; codex --remote-auth-token-env VAR; --ws-auth none turns this off)\n", path)
		}
	case "capability-token":
		if token, err = server.TokenHash(lf.tokenFile, lf.tokenSHA); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--ws-auth %q: want capability-token or none", lf.wsAuth)
	}
	for _, o := range lf.origins {
		if o != "*" && !strings.Contains(o, "://") {
			return fmt.Errorf("--ws-allow-origin %q: want scheme://host[:port] or *", o)
		}
	}
	// Bound before the session starts, so that tightening the umask for
	// the unix socket races with no file being created.
	l, err := ep.Listen()
	if err != nil {
		return err
	}
	if ep.Network == "unix" {
		defer os.Remove(ep.Address)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hub := server.NewHub(log)
	mgr := newManager(cfg, f, dataDir, hub.Client(), log)
	rn := newRunner(cfg, dataDir, mgr, log)
	bs := newBlueprints(cfg, mgr, hub.Client(), log)
	ps := newProjects(cfg, mgr, rn, bs, hub.Client(), log)
	rn.SetBlueprints(bs) // runs from a blueprint, and their evidence
	hub.OnAbandoned = mgr.ReleaseEphemeral
	svc := server.NewServices(mgr) // one set for every connection
	hub.OnWatchGone = svc.ForgetWatch
	hub.OnProcessGone = svc.TerminateProcess
	fmt.Fprintln(os.Stderr, "apserver: listening on", server.URL(l))
	stopBeat := heartbeat(ctx, ps, cfg.Manager)
	// Workers' threads are followed by no connection here: their
	// relayed requests go to every client.
	stopRelay := startRelay(cfg, mgr, hub.Broadcast(), nil, log)
	err = server.Serve(ctx, l, server.ListenOptions{
		TokenSHA256:  token,
		AllowOrigins: lf.origins,
		Server: server.Options{
			MaxLineBytes: cfg.MaxLineBytes,
			Logger:       log,
			Trace:        f.trace,
			ServerInfo:   server.ServerInfo{Name: "apserver", Version: version, Home: dataDir},
			Hub:          hub,
		},
		Setup: func(s *server.Server) {
			server.Register(s, mgr)
			server.RegisterServices(s, svc)
			server.RegisterRuns(s, rn)
			server.RegisterBlueprints(s, bs)
			server.RegisterManager(s, ps) // one driver for every connection: one lock per workspace
		},
	})
	stopRelay()
	stopBeat()
	bs.Close()
	rn.Close()
	if cerr := mgr.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// ensureTokenFile keeps the capability token a loopback listener requires
// by default at path: an existing token that only its owner can read is
// kept (a client set up once keeps working across restarts); otherwise a
// new random one is written, readable by the owner only.
func ensureTokenFile(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 == 0 {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("capability token: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return fmt.Errorf("capability token: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ws-token-*")
	if err != nil {
		return fmt.Errorf("capability token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(buf) + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("capability token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("capability token: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("capability token: %w", err)
	}
	return nil
}
