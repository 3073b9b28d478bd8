package rules

import "testing"

// privilegedForms are commands that run something as another user, written
// every way the corpus knows: each escalation program, with and without a
// command of its own, through wrappers, shells, find, xargs and eval.
var privilegedForms = []string{
	`sudo -s`,
	`sudo -i`,
	`sudo -u postgres psql`,
	`sudo -E env`,
	`sudo bash -c 'id'`,
	`sudo ls`,
	`sudo -l`,
	`sudoedit /etc/hosts`,
	`/usr/bin/sudo id`,
	`env sudo id`,
	`env FOO=1 sudo -s`,
	`bash -c 'sudo id'`,
	`sh -c "sudo -s"`,
	`timeout 5 sudo id`,
	`nohup sudo id &`,
	`command sudo id`,
	`exec sudo -s`,
	`echo pw | sudo -S id`,
	`echo id | xargs sudo`,
	`find . -maxdepth 0 -exec sudo id \;`,
	`eval "sudo id"`,
	`go test ./... && sudo id`,
	`s\udo id`,
	`su`,
	`su -`,
	`su root -c id`,
	`doas -s`,
	`doas id`,
	`pkexec id`,
	`run0`,
	`run0 id`,
	`ksu`,
	`runuser -u root id`,
	`machinectl shell root@`,
	`systemd-run --uid=0 id`,
	`gosu root id`,
	`su-exec root id`,
	`newgrp docker`,
	`sg docker -c id`,
	`busybox su`,
	`bash <<< "sudo -s"`,
	`f() { sudo "$@"; }; f id`,
}

// TestPrivileged: every form of running a command as another user is
// marked Privileged, whatever the rules decide; an allow rule of the
// user's does not clear it.
func TestPrivileged(t *testing.T) {
	rs, err := Parse("rules", []byte("allow sudo\nallow su\nallow doas\nallow pkexec\nallow run0\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Set{"builtin": Builtin(), "user allows": Builtin().With(rs...)} {
		for _, cmd := range privilegedForms {
			if v := s.Evaluate(cmd, testCtx); v.Privileged == "" {
				t.Errorf("%s: Evaluate(%q) = %v (%s), not privileged", name, cmd, v.Decision, v.Reason)
			}
		}
	}
	for _, cmd := range []string{`echo sudo`, `grep -r sudo .`, `man sudo`, `cat /etc/sudoers.d/x`, `ls /usr/bin/su*`, `git status`, `go test ./...`} {
		if v := Builtin().Evaluate(cmd, testCtx); v.Privileged != "" {
			t.Errorf("Evaluate(%q) is privileged: %s", cmd, v.Privileged)
		}
	}
}

// TestGitAliasOpaque: a git subcommand the rules cannot see (an alias, from
// whatever configuration, or a git-NAME program) is opaque, and so is
// writing configuration that can define aliases or run programs; git's own
// commands and harmless keys are read as before.
func TestGitAliasOpaque(t *testing.T) {
	opaque := []string{
		`git p origin main`,
		`git config alias.p push && git p origin main`,
		`git config alias.p push`,
		`git config --global alias.p push`,
		`git config --add alias.p push`,
		`git config set alias.p push`,
		`git config --file .git/config alias.p push`,
		`git config -f=.git/config alias.p '!git push'`,
		`git config include.path ../evil`,
		`git config includeIf.gitdir:/.path evil`,
		`git config core.pager 'sh -c id'`,
		`git config core.hooksPath .hooks`,
		`git config --rename-section foo alias`,
		`git config -e`,
		`git config edit`,
		`git config $k push`,
		`git -c alias.p=push p`,
		`git -c alias.p=push status`,
		`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p`,
		`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=id git log`,
		`export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0=push; git st`,
		`env GIT_CONFIG_PARAMETERS="'alias.p=push'" git p`,
		`GIT_CONFIG_GLOBAL=./evil git status`,
		`git -C sub p`,
		`git --no-pager p`,
		`sudo git p`,
		`bash -c 'git p'`,
		`git lfs push`,
		`git whatchanged`,
		`git replay --onto main topic`, // only newer gits have it: an alias elsewhere
		`git subtree push --prefix x origin main`,
		// Git commands that run a command of their arguments.
		`git submodule foreach 'git push'`,
		`git rebase --exec 'git push' HEAD~1`,
		`git rebase -x 'git push' HEAD~1`,
		`git rebase -ix 'git push' HEAD~1`,
		`git bisect run sh -c 'git push'`,
		`git filter-branch --tree-filter 'git push' HEAD`,
		`git difftool --extcmd 'sh -c id' HEAD`,
		`git fetch --upload-pack='touch /tmp/x' origin`,
		`git clone -u 'touch /tmp/x' repo dir`,
		`git for-each-repo --config=maintenance.repo push`,
	}
	readable := []struct {
		cmd  string
		want Decision
	}{
		{`git status`, A},
		{`git log --oneline -5`, A},
		{`git --version`, P},
		{`git config user.email a@b.c`, P},
		{`git config user.name "A B"`, P},
		{`git config --get alias.p`, P},
		{`git config alias.p`, P},
		{`git config --list`, P},
		{`git config --unset alias.p`, P},
		{`git config --global color.ui auto`, P},
		{`git commit -m x`, P},
		{`git push`, F},
		{`git rebase -i HEAD~2`, P},
		{`git submodule update --init`, P},
		{`git fetch origin`, P},
		{`git bisect start`, P},
		{`git -C sub push`, F},
	}
	s := Builtin()
	for _, cmd := range opaque {
		if v := s.Evaluate(cmd, testCtx); v.Opaque == "" || v.Decision == Allow {
			t.Errorf("Evaluate(%q) = %v (%s), want opaque", cmd, v.Decision, v.Reason)
		}
	}
	for _, tc := range readable {
		if v := s.Evaluate(tc.cmd, testCtx); v.Opaque != "" || v.Decision != tc.want {
			t.Errorf("Evaluate(%q) = %v, opaque %q; want %v, readable", tc.cmd, v.Decision, v.Opaque, tc.want)
		}
	}
	// The user's rule vouches for an alias they know.
	rs, err := Parse("rules", []byte("allow git st\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := Builtin().With(rs...).Evaluate("git st", testCtx); v.Opaque != "" || v.Decision != Allow {
		t.Errorf("git st under `allow git st` = %v, opaque %q", v.Decision, v.Opaque)
	}
}
