package shell

// privilegePrograms run a command (or a shell) as another user, root
// above all: no approval that covers a command in general may cover them.
// They count by name wherever they are (/usr/bin/sudo, a copy named sudo),
// since the name is all a static reading has.
var privilegePrograms = map[string]bool{
	"sudo": true, "sudoedit": true, "sudo-rs": true, "su": true, "su-rs": true,
	"doas": true, "pkexec": true, "run0": true, "ksu": true, "calife": true,
	"super": true, "please": true, "pleaseedit": true, "runuser": true,
	"gosu": true, "su-exec": true, "setuidgid": true, "newgrp": true, "sg": true,
	"systemd-run": true,
}

// privilegeOf says why ws runs a command as another user, or "".
func privilegeOf(ws []Word) string {
	name := Program(ws)
	switch {
	case privilegePrograms[name]:
		return name + " runs commands as another user (root, most often)"
	case name == "machinectl" && len(ws) > 1 && (ws[1].Text == "shell" || ws[1].Text == "login" || ws[1].Kind != Literal):
		return "machinectl " + ws[1].Src + " opens a session as another user"
	case name == "busybox" && len(ws) > 1 && ws[1].Kind == Literal && privilegePrograms[ws[1].Text]:
		return "busybox " + ws[1].Text + " runs commands as another user"
	}
	return ""
}

// markPrivilege records on p the first of its views that runs a command as
// another user.
func (p *Command) markPrivilege() {
	if p.Privileged != "" {
		return
	}
	for _, v := range p.Views {
		if why := privilegeOf(v); why != "" {
			p.Privileged = why
			return
		}
	}
}
