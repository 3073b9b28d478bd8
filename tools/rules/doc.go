// Package rules decides which shell commands the agent may run without
// asking, and which commands are checks: command rules from builtin
// defaults and rules files, and the evaluation of a bash command string
// against them.
//
// It owns the rules file format, the builtin rules, the verdict of a
// command and check detection. It reads commands through tools/shell, the
// one static reading of bash (with mvdan.cc/sh) that finds every simple
// command a command string may run. It runs nothing and touches no files
// except the rules files Load reads. It must not import session, server,
// store, model or tools (tools may import it).
//
// # Rules files
//
// Rules come from the builtin set, then the user's rules file (rules beside
// the user config file, so ~/.config/apserver/rules by default, or
// rules_file in the user config), then the workspace's .apserver/rules,
// whose allow rules the session drops unless the user trusts the project. A
// file is read line by line:
//
//	# Lines starting with # are comments; blank lines are ignored.
//	allow go test
//	allow go build
//	  match: go build ./...
//	  not-match: go vet ./...
//	prompt npm install
//	forbidden git push
//	  reason: pushing publishes work; a human must do it
//	  match: git push origin main
//	allow docker compose * ps
//	allow ./scripts/check.sh
//	check ./scripts/check.sh
//
// A rule is an unindented line `<decision> <words...>`. The decision is one
// of:
//
//	allow      run without asking
//	prompt     ask the user first
//	forbidden  never run; no approval can override it
//	check      decides nothing: the command is a check (see Checks)
//
// The words are a command prefix, written as shell words: quote them as in
// bash ('a b' is one word, "x" is x), and a trailing # comment is allowed.
// Expansions ($VAR, $(...), `...`, ~, {a,b}) are refused; quote them to mean
// the characters themselves. A word * (quoted or not) matches any one word;
// every other word, including ones holding * or ?, matches only itself. A
// rule matches a simple command whose first words are the prefix: "allow go
// test" matches `go test ./...` but not `go vet` or `go testing`. A first
// word without a slash also matches the program given by path (git matches
// /usr/bin/git); for allow rules only in /bin, /usr/bin, /usr/local/bin and
// the sbin directories, so `./git` is never allowed by "allow git". A first
// word with a slash, such as ./gradlew, matches that path exactly.
//
// Indented lines below a rule belong to it:
//
//	reason: <text>      shown with the decision (once per rule)
//	match: <command>    an example the rule must match
//	not-match: <command>  an example the rule must not match
//
// Examples are bash commands, read as commands to evaluate are (so `match:
// sudo go build` matches "allow go build"); a match example must be matched
// for certain by one of its simple commands, and a not-match example by
// none. Any problem refuses the whole file, with an error naming file:line:
// an unknown decision or directive, a directive before any rule, a prefix
// that is not plain words, or an example its rule does not decide as
// written:
//
//	.apserver/rules:4: not-match example "go vet ./..." matches rule "allow go"
//
// # Evaluation
//
// A command string is bash. Evaluate finds every simple command it may run:
// the commands of lists (;, &&, ||, newlines), pipelines, subshells ( ),
// groups { }, if/while/for/case bodies, function bodies, command
// substitutions $( ) and backquotes anywhere (in arguments, inside double
// quotes, in assignments and redirections, in here-documents), process
// substitutions <( ) >( ), the script of `bash -c '...'`, `sh -c`, `zsh -c`
// (and dash, ksh, mksh), a script fed to a shell as a here-document or
// here-string, the words of eval when they are plain, and the commands of
// find -exec, -execdir, -ok and -okdir, whose {} stands for a file at or
// under each starting point (so `find / -exec rm -rf {} +` removes /).
// Quotes are removed before matching, so an argument such as "git push"
// inside echo is a word, not a command, while `"git" push` is git push.
//
// Wrappers are looked through: env (with its options and VAR=value words,
// and the plain words of -S), sudo, doas, timeout, nice, nohup, xargs, time,
// command, builtin, exec, setsid, stdbuf, ionice and busybox, as well as leading VAR=value assignments and
// git's global options (git -C dir push is git push). Wrappers and shells
// count as such only by name or from a standard bin directory: ./env is a
// script like any other. Allow rules are
// matched against the command that finally runs; forbidden and prompt rules
// also against the command as written and after each wrapper, so "prompt
// sudo" catches `sudo make install`.
//
// Each simple command is decided by the strictest rule that matches it
// (forbidden over prompt over allow), wherever the rules come from, so a
// rules file can make things stricter but cannot undo a forbidden or prompt
// rule of the builtin set or an earlier file. A simple command no rule
// matches is prompted. The command's verdict is the strictest of its simple
// commands: `go test ./... && git push` is forbidden, `ls | grep x` is
// allowed.
//
// What cannot be known without running the command is treated as possibly
// anything. A variable, substitution, glob or brace expansion where a rule
// compares a word may or may not match: an allow rule then does not apply,
// and a forbidden rule turns the command into a prompt (`git $cmd` is
// prompted because $cmd may be push). A command whose program itself is
// unknown ($cmd, $(which x)), a `bash -c` of an unknown string, and a
// command string that does not parse are prompted.
//
// # Opaque commands
//
// Verdict.Opaque says why the rules cannot read a command fully; the
// session never runs an opaque command outside the kernel sandbox without a
// human. Inside the sandbox it is like any other command: running the
// workspace's code is what the sandbox is for. A command is opaque when a
// part of it:
//
//   - may or may not match a forbidden rule (`git $x`, `echo push | xargs
//     git`, `find . -exec rm -rf {} +`, which may remove the workspace);
//   - runs a program that cannot be known ($cmd, $(echo git)), or eval, a
//     shell's -c, or env -S of a dynamic string;
//   - runs inline code or code from standard input in an interpreter
//     (python -c, node -e, perl -e, ruby -e, `... | sh`, `... | python3`);
//   - runs a file: a shell or interpreter given a script (sh x.sh, python
//     x.py), source or ., a program given by a path outside the standard
//     bin directories (./x.sh, scripts/check.sh), or make, gmake and just
//     (recipes from a file in the workspace);
//   - defines an alias, or gives git configuration that can run programs or
//     define aliases (-c with any key but color.* and core.quotepath,
//     --config-env, --exec-path=, an assignment of GIT_CONFIG*);
//   - runs a git subcommand that is not one of git's own commands: an alias
//     from any configuration git reads, or a git-NAME program (git p);
//   - writes git configuration with git config (alias.*, include.path,
//     core.pager, ...: every key but user.name, user.email and a few
//     others that run nothing), or renames a section or edits the file;
//   - runs a git command that runs a command of its arguments (submodule
//     foreach, rebase --exec, bisect run, filter-branch, for-each-repo,
//     difftool --extcmd, --upload-pack, --receive-pack).
//
// A file-running part is readable when a rule that is not builtin allows it
// for certain (`allow make test`, `allow ./scripts/check.sh`): builtin rules
// vouch for no file. eval of plain words is read as the script it runs, so
// `eval "git push"` is forbidden. The rules do not read the code that
// allowed test runners and builds run (go test, npm test, pytest); the
// sandbox confines it. An opaque verdict is never Allow.
//
// # Privileged commands
//
// Verdict.Privileged says why a command runs a command as another user: a
// part whose program, as written or after a wrapper, is sudo, sudoedit, su,
// doas, pkexec, run0, ksu, runuser, gosu, su-exec, setuidgid, newgrp, sg,
// systemd-run, please, calife, super, machinectl shell|login or busybox
// su, by name or by any path. It is set whatever rule decides, so a rules
// file cannot clear it; the session asks a human for such a command every
// time (shell.Command.Privileged).
//
// # Builtin rules
//
// Allowed, as tests, builds and linters: go test, build, vet, fmt, list and
// version; gofmt -l and -d; golangci-lint run; staticcheck; cargo test, build, check, clippy and fmt; npm test,
// npm run test|build|lint; npx tsc; pnpm test, pnpm run test, pnpm lint;
// yarn test and lint; pytest; python -m pytest (and python3); tox; mypy;
// ruff check; mvn test; gradle test; ctest; cmake
// --build; tsc --noEmit; eslint; prettier --check; shellcheck.
//
// Allowed, as read-only: ls, cat, head, tail, wc, grep, pwd, echo, printf,
// which, stat, diff, cmp, comm, cut, tr, nl, du, df, basename, dirname,
// realpath, readlink, true, false, test, [, cd, type, command -v and -V,
// whoami, id, uname, md5sum, sha1sum, sha256sum, jq; with conditions: find
// without -exec, -execdir, -ok, -okdir, -delete, -fls or -fprint*; sed -n
// without -i or -f, whose script only prints (p, =, l, q, s///p); sort
// without -o or --compress-program; uniq with at most one file; tree
// without -o; rg without --pre; file without -C; date without -s. Read-only
// git: status, rev-parse, ls-files, blame, describe; diff, log and show
// without --output or --ext-diff; grep without -O; branch when it only
// lists; remote, remote -v and remote get-url. An argument that may expand
// to one of the excluded options (an unquoted $x, or a glob such as *.txt
// that may match a file named like an option) makes the command prompted.
//
// Prompted: sudo, doas, su, eval, source and .; assignments to variables
// that change what runs (PATH, LD_*, IFS, BASH_ENV, GIT_SSH_COMMAND,
// GIT_EXTERNAL_DIFF, GIT_CONFIG*, GOFLAGS, CC, PAGER other than cat, ...,
// whether VAR=x cmd, env VAR=x cmd or export VAR=x); git -c with keys
// other than color.* and core.quotepath; go -exec and -toolexec; any output
// redirection (>, >>, &>, <>) to a file (anything but /dev/null and the
// like), since a command that writes a file is no longer read-only — with a
// separate reason when the file is outside the writable roots or named by
// an expansion.
//
// Forbidden:
//
//   - rm -r, -R, -rf, -fr, --recursive (any spelling) of /, the home
//     directory (~, $HOME), a writable root or a directory above one, or of
//     anything outside the writable roots, such as ../other or ../*.
//     Relative targets are resolved against Context.Cwd and against every
//     directory the command may cd to (an absolute path, or home); after
//     any other cd or pushd they are unknown, and prompted. A target
//     strictly inside a writable root is not forbidden (it follows the
//     other rules, and is prompted by default); neither is a glob whose
//     directory is a writable root (rm -rf * in the workspace). A target
//     that is an expansion ($dir) is prompted. Context.WritableRoots
//     defaults to Context.Cwd.
//   - git push.
//   - shutdown, reboot, halt, poweroff, init 0|6, telinit 0|6, systemctl
//     poweroff|reboot|halt|kexec.
//   - mkfs, mkfs.*, mke2fs, mkswap.
//   - dd with of=/dev/... other than /dev/null and the like.
//   - A redirection to a block device or raw memory: > /dev/sd*, /dev/nvme*,
//     /dev/mmcblk*, /dev/mem, ...
//   - Downloaded code reaching an interpreter: curl or wget piped into sh,
//     bash, zsh, python*, perl, node, ... or into sudo; bash <(curl ...);
//     sh -c "$(curl ...)"; source <(wget -O- ...).
//   - A fork bomb: a function that pipes or backgrounds calls to itself,
//     such as :(){ :|:& };:.
//   - chmod, chown or chgrp -R of /, the home directory, a writable root
//     or a directory above one.
//
// Everything else is prompted.
//
// # Checks
//
// A check rule (`check <words>`) names a test, build or linter whose exit
// status says whether the work is sound; full auto weighs a completion
// claim against the last one. It decides nothing about running the
// command. Set.Check reports whether a command runs a check: a simple
// command whose command that finally runs (after wrappers, inside bash -c,
// after cd ... &&) a check rule matches for certain, with a first word
// given by any path (/usr/local/go/bin/go test). Mentioning a check is not
// running it: echo go test, grep -r tox . and cat /usr/share/doc/make run
// none. A check is conclusive when the command exits 0 only if the check
// does (shell.Command.Decides): make test, cd x && go test ./..., timeout
// 60 pytest -q, /bin/bash -c 'make test', make test 2>&1. It is
// inconclusive, no evidence either way, when the exit status may hide its
// failure: a pipeline stage before the last without set -o pipefail (make
// test | tail exits with tail's status), before a `;` without set -e, on
// either side of ||, negated, in the background, or in a condition or
// loop. A command with any inconclusive check is inconclusive.
//
// Builtin checks: go test, build and vet; staticcheck; golangci-lint run;
// cargo test, build, check and clippy; npm test, npm run
// test|build|lint|check; npx tsc; pnpm test, build, lint and run
// test|build|lint; yarn test, build, lint and run test; pytest; python -m
// pytest (and python3); tox; mypy; ruff; eslint; tsc; mvn test, verify and
// package; gradle and ./gradlew test, build and check; ctest; bazel test
// and build; make test, check, build, lint and all; gmake test and check;
// make with no target; just test. A check rule has Decision Allow, so that where allow
// rules are ignored (an untrusted workspace rules file) checks are too.
package rules
