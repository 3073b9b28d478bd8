package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/services/clientinfo"
	"github.com/apserver/apserver/services/configread"
	"github.com/apserver/apserver/services/fswatch"
	"github.com/apserver/apserver/services/fuzzy"
	"github.com/apserver/apserver/session"
)

// Services are the methods beside the threads (services/): they never
// touch a thread. They are made once per Manager (NewServices), shared by
// every connection (RegisterServices on each), and closed with the
// Manager.
type Services struct {
	fuzzy  *fuzzy.Service
	watch  *fswatch.Service
	config *configread.Service
	info   *clientinfo.Service
}

// NewServices makes the services of m: they read its defaults, config and
// client, and stop when it closes.
func NewServices(m *session.Manager) *Services {
	svc := &Services{
		fuzzy:  fuzzy.New(),
		watch:  fswatch.New(m.Notify),
		config: &configread.Service{Defaults: m.Defaults, Config: m.Config(), Sources: m.ConfigSources()},
		info:   &clientinfo.Service{Cwd: func() string { return m.Defaults().Cwd }},
	}
	m.AtClose(svc.fuzzy.Close)
	m.AtClose(svc.watch.Close)
	return svc
}

// ForgetWatch ends an fs/watch (by the session's watch id) whose
// connection closed (Hub.OnWatchGone).
func (svc *Services) ForgetWatch(id string) { svc.watch.Forget(id) }

// RegisterServices wires the services' methods into s.
func RegisterServices(s *Server, svc *Services) {
	Handle(s, protocol.MethodFuzzyFileSearch, svc.fuzzy.FileSearch)
	Handle(s, protocol.MethodFsWatch, svc.watch.Watch)
	Handle(s, protocol.MethodFsUnwatch, svc.watch.Unwatch)
	Handle(s, protocol.MethodConfigRead, svc.config.Read)
	Handle(s, protocol.MethodAccountRead, svc.info.ReadAccount)
	Handle(s, protocol.MethodConfigRequirementsRead, svc.info.ReadConfigRequirements)
	Handle(s, protocol.MethodSkillsList, svc.info.ListSkills)
	Handle(s, protocol.MethodHooksList, svc.info.ListHooks)
	Handle(s, protocol.MethodCollaborationModeList, svc.info.ListCollaborationModes)
	Handle(s, protocol.MethodBedrockGovCloud, svc.info.CheckBedrockGovCloud)
	Handle(s, protocol.MethodPluginInstalled, svc.info.ListInstalledPlugins)
}
