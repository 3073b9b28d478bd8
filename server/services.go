package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/services/clientinfo"
	"github.com/apserver/apserver/services/cmdexec"
	"github.com/apserver/apserver/services/configread"
	"github.com/apserver/apserver/services/explain"
	"github.com/apserver/apserver/services/fswatch"
	"github.com/apserver/apserver/services/fuzzy"
	"github.com/apserver/apserver/services/threadsearch"
	"github.com/apserver/apserver/session"
)

// Services are the methods beside the threads (services/): they never
// touch a thread. They are made once per Manager (NewServices), shared by
// every connection (RegisterServices on each), and closed with the
// Manager.
type Services struct {
	exec   *cmdexec.Service
	fuzzy  *fuzzy.Service
	watch  *fswatch.Service
	config *configread.Service
	info   *clientinfo.Service
	policy *explain.Service
	search *threadsearch.Service
}

// NewServices makes the services of m: they read its defaults, config and
// client, and stop when it closes.
func NewServices(m *session.Manager) *Services {
	exec := cmdexec.New()
	exec.Defaults, exec.Plan, exec.Notify, exec.Log = m.Defaults, m.UserCommandPlan, m.Notify, m.Logger()
	svc := &Services{
		exec:   exec,
		fuzzy:  fuzzy.New(),
		watch:  fswatch.New(m.Notify),
		config: &configread.Service{Defaults: m.Defaults, Config: m.Config(), Sources: m.ConfigSources()},
		info:   &clientinfo.Service{Cwd: func() string { return m.Defaults().Cwd }},
		policy: &explain.Service{Judge: m.JudgePolicy},
		search: &threadsearch.Service{Store: m.Store, Thread: m.WireThread},
	}
	m.AtClose(svc.exec.Close)
	m.AtInputInterrupted(svc.exec.InputInterrupted)
	m.AtClose(svc.fuzzy.Close)
	m.AtClose(svc.watch.Close)
	return svc
}

// ForgetWatch ends an fs/watch (by the session's watch id) whose
// connection closed (Hub.OnWatchGone).
func (svc *Services) ForgetWatch(id string) { svc.watch.Forget(id) }

// TerminateProcess ends a command/exec process (by the session's process
// id) whose connection closed (Hub.OnProcessGone).
func (svc *Services) TerminateProcess(id string) { svc.exec.TerminateProcess(id) }

// RegisterServices wires the services' methods into s. Behind a Hub the
// command/exec process ids are the connection's (hub.go scopeID), output
// deltas go to that connection only, and its processes are terminated
// when it closes.
func RegisterServices(s *Server, svc *Services) {
	Handle(s, protocol.MethodCommandExec, svc.exec.Exec)
	Handle(s, protocol.MethodCommandExecWrite, svc.exec.Write)
	Handle(s, protocol.MethodCommandExecResize, svc.exec.Resize)
	Handle(s, protocol.MethodCommandExecTerminate, svc.exec.Terminate)
	Handle(s, protocol.MethodFuzzyFileSearch, svc.fuzzy.FileSearch)
	Handle(s, protocol.MethodFsWatch, svc.watch.Watch)
	Handle(s, protocol.MethodFsUnwatch, svc.watch.Unwatch)
	Handle(s, protocol.MethodConfigRead, svc.config.Read)
	Handle(s, protocol.MethodPolicyExplain, svc.policy.Explain)
	registerSearch(s, svc.search)
	Handle(s, protocol.MethodAccountRead, svc.info.ReadAccount)
	Handle(s, protocol.MethodConfigRequirementsRead, svc.info.ReadConfigRequirements)
	Handle(s, protocol.MethodSkillsList, svc.info.ListSkills)
	Handle(s, protocol.MethodHooksList, svc.info.ListHooks)
	Handle(s, protocol.MethodCollaborationModeList, svc.info.ListCollaborationModes)
	Handle(s, protocol.MethodBedrockGovCloud, svc.info.CheckBedrockGovCloud)
	Handle(s, protocol.MethodPluginInstalled, svc.info.ListInstalledPlugins)
}
