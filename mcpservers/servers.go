package mcpservers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/tools/sandbox"
)

// Servers are the configured MCP servers and the one pool of connections
// to them that every thread shares. Any goroutine may use it; its fields
// are small leaf state behind mu.
type Servers struct {
	// Pool connects to the servers and calls them.
	Pool *mcp.Pool

	cwd     string
	sources config.Sources
	log     *slog.Logger
	notify  func(method string, params any)

	mu      sync.Mutex
	servers map[string]config.MCPServer // the configuration in effect
	// approved are the tools a thread's user allowed for the session
	// (Approve); active the calls in flight by server, for their
	// elicitations (Call).
	approved map[string]bool
	active   map[string][]*caller
}

// Options configure Servers.
type Options struct {
	// Config are the configured servers.
	Config map[string]config.MCPServer
	// Cwd is where a stdio server without a cwd runs, and the workspace
	// whose config a reload reads when Sources names no workspace file.
	Cwd string
	// Sources are the config files a reload reads again.
	Sources config.Sources
	Log     *slog.Logger
	// Notify sends mcpServer/startupStatus/updated.
	Notify func(method string, params any)
}

// defaultMCPEnv are the variables a stdio server inherits besides those it
// names (Codex's default set).
var defaultMCPEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}

// New makes the pool of o.Config's enabled servers; none starts before
// its first use.
func New(o Options) *Servers {
	s := &Servers{cwd: o.Cwd, sources: o.Sources, log: o.Log, notify: o.Notify, servers: o.Config}
	s.Pool = mcp.NewPool(s.poolServers(s.servers), mcp.Options{
		Log:     o.Log,
		Elicit:  s.elicit, // to the call in flight (tools.go)
		OnState: s.onState,
	})
	return s
}

// Close stops every server: no MCP server process outlives apserver.
func (s *Servers) Close() { s.Pool.Close() }

// Config is the configuration in effect (it changes on Reload).
func (s *Servers) Config() map[string]config.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers
}

// poolServers turns the enabled configured servers into what the pool
// starts: the environment of a stdio server, the headers of an HTTP one.
func (s *Servers) poolServers(cfg map[string]config.MCPServer) []mcp.Server {
	var out []mcp.Server
	for _, name := range sortedNames(cfg) {
		c := cfg[name]
		if !c.Enabled {
			continue
		}
		srv := mcp.Server{Name: name, StartupTimeout: c.StartupTimeout}
		if c.Stdio() {
			srv.Command, srv.Args, srv.Cwd = c.Command, c.Args, c.Cwd
			if srv.Cwd == "" {
				srv.Cwd = s.cwd
			}
			for _, k := range append(slices.Clone(defaultMCPEnv), c.EnvVars...) {
				if v, ok := os.LookupEnv(k); ok {
					srv.Env = append(srv.Env, k+"="+v)
				}
			}
			for _, k := range sortedNames(c.Env) {
				srv.Env = append(srv.Env, k+"="+c.Env[k])
			}
		} else {
			srv.URL = c.URL
			srv.Headers = map[string]string{}
			for k, v := range c.HTTPHeaders {
				srv.Headers[k] = v
			}
			for k, env := range c.EnvHTTPHeaders {
				if v := os.Getenv(env); v != "" {
					srv.Headers[k] = v
				}
			}
			if c.BearerTokenEnvVar != "" {
				if v := os.Getenv(c.BearerTokenEnvVar); v != "" {
					srv.Headers["Authorization"] = "Bearer " + v
				} else {
					s.log.Warn("MCP server's bearer_token_env_var is not set", "server", name, "var", c.BearerTokenEnvVar)
				}
			}
		}
		out = append(out, srv)
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// onState tells clients how a server's start went
// (mcpServer/startupStatus/updated).
func (s *Servers) onState(name string, st mcp.State, err error) {
	n := protocol.McpServerStatusUpdatedNotification{Name: name}
	switch st {
	case mcp.Starting:
		n.Status = protocol.McpStartupStarting
	case mcp.Connected:
		n.Status = protocol.McpStartupReady
	case mcp.Failed:
		n.Status = protocol.McpStartupFailed
		if err != nil {
			n.Error = ptr(err.Error())
		}
	default:
		return
	}
	s.notify(protocol.NotifyMcpServerStartupStatus, n)
}

// ListStatus implements mcpServerStatus/list: every configured
// server (or the one named), sorted by name, with its runtime status,
// tools and resources. A server no one has started yet is started first;
// one that failed is shown failed (it restarts on its next use).
func (s *Servers) ListStatus(ctx context.Context, p protocol.McpServerStatusListParams, reply port.Reply) {
	cfg := s.Config()
	names := sortedNames(cfg)
	if p.ServerName != nil {
		if _, ok := cfg[*p.ServerName]; !ok {
			reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: serverName: no MCP server %q is configured", *p.ServerName))
			return
		}
		names = []string{*p.ServerName}
	}
	start := 0
	if p.Cursor != nil {
		start, _ = strconv.Atoi(*p.Cursor)
	}
	limit := 100
	if p.Limit != nil && *p.Limit > 0 {
		limit = int(*p.Limit)
	}
	start = min(start, len(names))
	end := min(start+limit, len(names))
	page := names[start:end]
	go func() {
		var wg sync.WaitGroup
		for _, n := range page {
			if cfg[n].Enabled {
				wg.Go(func() { _ = s.Pool.Start(context.WithoutCancel(ctx), n, false) })
			}
		}
		wg.Wait()
		res := protocol.McpServerStatusListResult{Data: make([]protocol.McpServerStatus, 0, len(page))}
		for _, n := range page {
			st := s.status(n, cfg[n])
			if p.Detail != nil && *p.Detail == "toolsAndAuthOnly" {
				st.Resources, st.ResourceTemplates = []json.RawMessage{}, []json.RawMessage{}
			}
			res.Data = append(res.Data, st)
		}
		if end < len(names) {
			res.NextCursor = ptr(strconv.Itoa(end))
		}
		reply(res, nil)
	}()
}

// status is one server's entry in mcpServerStatus/list.
func (s *Servers) status(name string, c config.MCPServer) protocol.McpServerStatus {
	out := protocol.McpServerStatus{Name: name, AuthStatus: "unsupported", Tools: map[string]json.RawMessage{},
		Resources: []json.RawMessage{}, ResourceTemplates: []json.RawMessage{}, RuntimeStatus: protocol.McpDisabled}
	if c.BearerTokenEnvVar != "" {
		out.AuthStatus = "bearerToken"
	}
	if u, err := url.Parse(c.URL); err == nil && c.URL != "" {
		out.HTTPOrigin = ptr(u.Scheme + "://" + u.Host)
	}
	st, ok := s.Pool.Status(name)
	if !c.Enabled || !ok {
		return out
	}
	switch st.State {
	case mcp.NotStarted:
		out.RuntimeStatus = protocol.McpNotStarted
	case mcp.Starting:
		out.RuntimeStatus = protocol.McpStarting
	case mcp.Connected:
		out.RuntimeStatus = protocol.McpConnected
	case mcp.Failed:
		out.RuntimeStatus = protocol.McpFailed
		out.ToolsError = ptr(st.Err)
	}
	for _, tl := range st.Tools {
		if c.ToolEnabled(tl.Name) {
			out.Tools[tl.Name] = tl.Raw
		}
	}
	out.Resources = append(out.Resources, st.Resources...)
	out.ResourceTemplates = append(out.ResourceTemplates, st.Templates...)
	out.ServerInfo = st.Info
	return out
}

// CallTool implements mcpServer/tool/call: the client calls a tool
// itself (no approval: the user asked), within the server's tool timeout.
func (s *Servers) CallTool(ctx context.Context, p protocol.McpServerToolCallParams, reply port.Reply) {
	c, ok := s.Config()[p.Server]
	if !ok || !c.Enabled {
		reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: server: no enabled MCP server %q is configured", p.Server))
		return
	}
	if !c.ToolEnabled(p.Tool) {
		reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: tool: %q is not enabled on MCP server %q", p.Tool, p.Server))
		return
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	go func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ToolTimeout)
		defer cancel()
		res, err := s.Pool.Call(cctx, p.Server, p.Tool, args, nil)
		if err != nil {
			reply(nil, fmt.Errorf("mcpServer/tool/call: %w", err))
			return
		}
		out := protocol.McpServerToolCallResult{Content: res.Content, StructuredContent: res.Structured, Meta: res.Meta}
		if res.IsError {
			out.IsError = ptr(true)
		}
		reply(out, nil)
	}()
}

// ReadResource implements mcpServer/resource/read.
func (s *Servers) ReadResource(ctx context.Context, p protocol.McpResourceReadParams, reply port.Reply) {
	c, ok := s.Config()[p.Server]
	if !ok || !c.Enabled {
		reply(nil, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: server: no enabled MCP server %q is configured", p.Server))
		return
	}
	go func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ToolTimeout)
		defer cancel()
		contents, err := s.Pool.ReadResource(cctx, p.Server, p.URI)
		if err != nil {
			reply(nil, fmt.Errorf("mcpServer/resource/read: %w", err))
			return
		}
		reply(protocol.McpResourceReadResult{Contents: contents}, nil)
	}()
}

// Reload implements config/mcpServer/reload: the config files
// are read again; a server whose configuration changed, or that is gone,
// is stopped, and new or changed ones start on their next use.
func (s *Servers) Reload(ctx context.Context, _ protocol.Empty, reply port.Reply) {
	src := s.sources
	ws := s.cwd
	if src.WorkspaceFile != "" {
		ws = filepath.Dir(filepath.Dir(src.WorkspaceFile))
	}
	if ws == "" {
		ws, _ = os.Getwd()
	}
	opts := config.LoadOptions{UserFile: src.UserFile, Workspace: ws}
	if _, err := os.Stat(src.UserFile); errors.Is(err, fs.ErrNotExist) {
		// No user file, as at start (the default path, or one removed
		// since): its servers are none.
		opts.UserFile, opts.NoUserFile = "", true
	}
	cfg, err := config.Load(opts)
	if err != nil {
		reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "config/mcpServer/reload: %v", err))
		return
	}
	for _, w := range cfg.Warnings {
		s.log.Warn(w)
	}
	// A server added now may read its credentials from variables the
	// start did not know of: commands must not get them either.
	for name := range cfg.OwnSecretEnv() {
		sandbox.HideEnv(name)
	}
	s.mu.Lock()
	s.servers = cfg.MCPServers
	s.mu.Unlock()
	s.Pool.Reload(s.poolServers(cfg.MCPServers))
	reply(protocol.Empty{}, nil)
}

func ptr[T any](v T) *T { return &v }
