package server

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// registerThread wires the thread/* methods and model/list to the session.
func registerThread(s *Server, m *session.Manager) {
	Handle(s, protocol.MethodThreadStart, m.StartThread)
	Handle(s, protocol.MethodThreadResume, m.ResumeThread)
	Handle(s, protocol.MethodThreadFork, m.ForkThread)
	Handle(s, protocol.MethodThreadList, m.ListThreads)
	Handle(s, protocol.MethodThreadRead, m.ReadThread)
	Handle(s, protocol.MethodThreadArchive, m.ArchiveThread)
	Handle(s, protocol.MethodThreadUnarchive, m.UnarchiveThread)
	Handle(s, protocol.MethodThreadNameSet, m.SetThreadName)
	Handle(s, protocol.MethodModelList, m.ListModels)
}
