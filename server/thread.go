package server

import (
	"context"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerThread wires the thread/* methods and model/list to the session.
// Settings that decoding cannot check (a cwd that must exist, a provider or
// model that must be configured) are checked first, so a refused request
// changes nothing.
func registerThread(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadStart, checked(m.StartThread, func(p *protocol.ThreadStartParams) error {
		if err := s.checkDynamicTools(p); err != nil { // dynamictools.go
			return err
		}
		return m.ValidateThreadSettings(p.ThreadSettings)
	}))
	Handle(s, protocol.MethodThreadResume, checked(m.ResumeThread, func(p *protocol.ThreadResumeParams) error {
		return m.ValidateThreadSettings(p.ThreadSettings)
	}))
	Handle(s, protocol.MethodThreadFork, checked(m.ForkThread, func(p *protocol.ThreadForkParams) error {
		return m.ValidateThreadSettings(p.ThreadSettings)
	}))
	Handle(s, protocol.MethodThreadList, m.ListThreads)
	Handle(s, protocol.MethodThreadRead, m.ReadThread)
	Handle(s, protocol.MethodThreadArchive, m.ArchiveThread)
	Handle(s, protocol.MethodThreadUnarchive, m.UnarchiveThread)
	Handle(s, protocol.MethodThreadNameSet, m.SetThreadName)
	Handle(s, protocol.MethodThreadCompactStart, m.CompactThread)
	Handle(s, protocol.MethodModelList, m.ListModels)
}

// checked runs check on the decoded params before fn; an error from check
// is the reply and fn does not run. check runs on the read loop: it must be
// quick.
func checked[P any](fn func(context.Context, P, session.Reply), check func(*P) error) func(context.Context, P, session.Reply) {
	return func(ctx context.Context, p P, reply session.Reply) {
		if err := check(&p); err != nil {
			reply(nil, err)
			return
		}
		fn(ctx, p, reply)
	}
}
