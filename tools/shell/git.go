package shell

import (
	"fmt"
	"strings"
)

// gitCommands are git's own commands: its builtins and the programs and
// scripts of a core install (git --list-cmds=main of git 2.39). An alias
// never replaces one of them: git ignores an alias that has a command's
// name, except a deprecated command's (whatchanged, pack-redundant, which
// are left out here). Any other subcommand may be an alias, from any
// configuration git reads, or a git-NAME program on PATH. Commands that
// only newer gits have (replay, refs, backfill, ...), and those that
// distributions package apart (subtree, svn, send-email, p4, cvs*), are
// left out too: where they are missing, an alias of that name runs.
var gitCommands = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(`add am annotate apply archive bisect blame branch bugreport
		bundle cat-file check-attr check-ignore check-mailmap check-ref-format checkout checkout-index
		cherry cherry-pick clean clone column commit commit-graph commit-tree config count-objects
		credential credential-cache credential-store daemon describe diagnose diff diff-files diff-index
		diff-tree difftool fast-export fast-import fetch fetch-pack filter-branch
		fmt-merge-msg for-each-ref for-each-repo format-patch fsck fsck-objects fsmonitor--daemon gc
		get-tar-commit-id grep hash-object help hook http-backend http-fetch http-push imap-send
		index-pack init init-db instaweb interpret-trailers log ls-files ls-remote
		ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-octopus
		merge-one-file merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs
		merge-resolve merge-subtree merge-tree mergetool mktag mktree multi-pack-index mv name-rev
		notes pack-objects pack-refs patch-id pickaxe prune prune-packed pull push quiltimport
		range-diff read-tree rebase receive-pack reflog remote remote-ext remote-fd repack
		replace request-pull rerere reset restore rev-list rev-parse revert rm send-pack
		shell shortlog show show-branch show-index show-ref sparse-checkout stage stash status
		stripspace submodule switch symbolic-ref tag unpack-file unpack-objects update-index
		update-ref update-server-info upload-archive upload-pack var verify-commit verify-pack
		verify-tag version web--browse worktree write-tree`) {
		m[c] = true
	}
	return m
}()

// gitOpaque says what of git's own doing the rules cannot read in g, git's
// command without its global options: a subcommand that is not one of
// git's commands (an alias or a git-NAME program), a `git config` that
// writes configuration able to define aliases or run programs, or a
// subcommand that runs a command given in its arguments.
func gitOpaque(g []Word) string {
	if len(g) < 2 || g[1].Kind != Literal || strings.HasPrefix(g[1].Text, "-") {
		return "" // no subcommand, an option (--version), or an expansion the rules weigh
	}
	sub := g[1].Text
	if !gitCommands[sub] {
		return fmt.Sprintf("git %s is not a git command: it may be an alias (from the repository's, the user's or the system's git configuration, an include, -c or GIT_CONFIG_* variables) or a git-%s program, which the rules do not read", sub, sub)
	}
	if sub == "config" {
		return gitConfigWrite(g[2:])
	}
	return gitRunsCommand(sub, g[2:])
}

// gitRunsCommand says why git's sub, given args, runs a command of its
// arguments that the rules do not read: submodule foreach, rebase --exec,
// bisect run, filter-branch, for-each-repo, difftool --extcmd, and the
// --upload-pack or --receive-pack program of a transport.
func gitRunsCommand(sub string, args []Word) string {
	why := func(what string) string {
		return fmt.Sprintf("git %s runs %s, which the rules do not read", sub, what)
	}
	switch sub {
	case "filter-branch":
		return why("the commands of its filters")
	case "for-each-repo":
		return why("a git command in every repository its configuration lists")
	}
	for i, a := range args {
		if a.Kind != Literal {
			switch sub {
			case "submodule", "rebase", "bisect", "difftool", "fetch", "pull", "clone", "ls-remote", "archive", "fetch-pack", "send-pack":
				return fmt.Sprintf("cannot tell whether git %s %s runs a command", sub, a.Src)
			}
			continue
		}
		t := a.Text
		switch {
		case sub == "submodule" && t == "foreach":
			return why("a shell command in every submodule")
		case sub == "bisect" && i == 0 && t == "run":
			return why("a command at every step")
		case sub == "rebase" && (strings.HasPrefix(t, "--exec") || len(t) > 1 && t[0] == '-' && t[1] != '-' && strings.ContainsRune(t, 'x')):
			return why("a shell command after each commit (--exec)")
		case sub == "difftool" && (t == "-x" || strings.HasPrefix(t, "--extcmd")):
			return why("the command --extcmd gives")
		case strings.HasPrefix(t, "--upload-pack") || strings.HasPrefix(t, "--receive-pack") || strings.HasPrefix(t, "--exec=") ||
			(sub == "clone" || sub == "ls-remote") && t == "-u":
			return why("the program " + t + " names")
		}
	}
	return ""
}

// safeGitConfigWrite are keys `git config` may set without defining an
// alias or making git run another program.
func safeGitConfigWrite(key string) bool {
	key = strings.ToLower(key)
	switch key {
	case "user.name", "user.email", "init.defaultbranch", "core.quotepath", "core.autocrlf",
		"core.filemode", "core.ignorecase", "pull.rebase", "pull.ff", "merge.conflictstyle":
		return true
	}
	return strings.HasPrefix(key, "color.") || strings.HasPrefix(key, "advice.")
}

// gitConfigWrite says why `git config args` changes configuration the rules
// must not trust (alias.*, include.path, core.pager, ...), or "" when it only
// reads, removes, or sets a key of safeGitConfigWrite.
func gitConfigWrite(args []Word) string {
	const why = "git config %s can define aliases or make git run other programs, which the rules do not read"
	var operands []string
	write := false // --add, --replace-all: the next operands are key and value
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.Kind != Literal {
			return fmt.Sprintf("cannot tell what git config %s writes", a.Src)
		}
		t := a.Text
		name, _, hasVal := strings.Cut(t, "=")
		switch {
		case t == "--":
			for _, o := range args[i+1:] {
				if o.Kind != Literal {
					return fmt.Sprintf("cannot tell what git config %s writes", o.Src)
				}
				operands = append(operands, o.Text)
			}
			i = len(args)
		case name == "-f" || name == "--file" || name == "--blob" || name == "--type" || name == "--default" || name == "--comment" || name == "-t":
			if !hasVal {
				i++
			}
		case strings.HasPrefix(t, "--get") || t == "-l" || t == "--list" || strings.HasPrefix(t, "--unset") || t == "--remove-section":
			return "" // reads or removes
		case t == "-e" || t == "--edit":
			return fmt.Sprintf(why, t+" (an editor, writing anything)")
		case t == "--rename-section":
			return fmt.Sprintf(why, t)
		case t == "--add" || t == "--replace-all":
			write = true
		case strings.HasPrefix(t, "-"):
		default:
			operands = append(operands, t)
		}
	}
	if len(operands) == 0 {
		return ""
	}
	switch operands[0] {
	case "get", "list", "unset", "remove-section":
		return ""
	case "edit", "rename-section":
		return fmt.Sprintf(why, operands[0])
	case "set":
		operands = operands[1:]
		write = true
	}
	if len(operands) == 0 || !write && len(operands) < 2 {
		return "" // git config KEY reads it
	}
	if safeGitConfigWrite(operands[0]) {
		return ""
	}
	return fmt.Sprintf(why, "sets "+operands[0]+", which")
}
