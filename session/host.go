package session

import (
	"log/slog"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcpservers"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/sandbox"
)

// ConfigSources name what config/read reports as layers (config.Sources).
type ConfigSources = config.Sources

// What the services beside the threads (command/exec, fs/watch, config/read,
// ... in services/, registered by server) read of the session: its
// defaults, its config and its client. None of it touches a thread.

// Defaults are the settings a thread started without overrides gets.
func (m *Manager) Defaults() port.Defaults {
	s := m.defaultSettings()
	return port.Defaults{Cwd: s.Cwd, Model: s.Model, Provider: s.Provider, ApprovalPolicy: s.ApprovalPolicy, Sandbox: s.Sandbox}
}

// Config is the configuration the Manager was made with.
func (m *Manager) Config() config.Config { return m.opts.Config }

// ConfigSources are the config files and flags the Manager was made with.
func (m *Manager) ConfigSources() ConfigSources { return m.opts.ConfigSources }

// Logger is where the Manager logs.
func (m *Manager) Logger() *slog.Logger { return m.log }

// UserCommandPlan judges script as the client's user's own command, run
// outside any thread (command/exec) in cwd under sandbox mode sb, by the
// rules a thread's commands get: the sandbox it runs in (nil: none), or
// why it is refused. No approval is asked (the user is the human one would
// ask) and no warning sent about a missing sandbox (no thread to warn).
func (m *Manager) UserCommandPlan(cwd string, sb protocol.SandboxMode, script string) (*sandbox.Policy, string) {
	s := m.defaultSettings()
	s.Cwd, s.Sandbox = cwd, sb
	var cache *rulesCache
	warned := true
	return judge{m: m, settings: s, rules: &cache, sandboxWarned: &warned}.userCommandPlan(script)
}

// ErrSearchCancelled is the answer of a thread search stopped by a cancel
// (services/threadsearch).
var ErrSearchCancelled = port.ErrSearchCancelled

// WireThread is a stored thread as the wire shows it, with its live status
// (loaded, running, waiting) when it is loaded; its turns are empty.
func (m *Manager) WireThread(meta store.Thread) protocol.Thread {
	return m.wireThread(meta, m.liveStatus(meta.ID))
}

// MCPServers are the MCP servers every thread shares; server registers
// their own methods (mcpServerStatus/list, ...).
func (m *Manager) MCPServers() *mcpservers.Servers { return m.mcp.srv }

// Notify sends a notification that is about no thread to the client.
func (m *Manager) Notify(method string, params any) { m.notify(method, params) }

// AtClose adds f to what Close runs once every thread has stopped, in the
// order added: a service's own shutdown.
func (m *Manager) AtClose(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.atClose = append(m.atClose, f)
}

// AtInputInterrupted adds f to what InputClosed runs under EOFInterrupt
// (the client closed its input and wants apserver gone): a service ends
// its work at once and refuses more.
func (m *Manager) AtInputInterrupted(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.atInterrupt = append(m.atInterrupt, f)
}

// hooks returns a copy of a hook list, taken under m.mu.
func (m *Manager) hooks(l *[]func()) []func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]func(){}, (*l)...)
}
