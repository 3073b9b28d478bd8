// Package shell is apserver's one reading of shell commands: it parses a
// bash command string once, with mvdan.cc/sh, and yields every simple
// command the string may run. The command rules (tools/rules), the command
// actions shown to the editor (tools.ParseCommandActions) and full auto's
// check detection (rules.Set.Check) all read commands through it.
//
// Parse follows lists (;, &&, ||, newlines), pipelines, subshells, groups,
// control flow, function bodies, command and process substitutions
// anywhere in a word, the script of `bash -c '...'` (and sh, zsh, dash,
// ksh, mksh, so the `/bin/bash -c '...'` form apserver runs commands in),
// a script fed to a shell as a here-document or here-string, eval of plain
// words, and find -exec. It looks through wrappers (env, sudo, doas,
// timeout, nice, nohup, xargs, time, command, builtin, exec, setsid,
// stdbuf, ionice, busybox) and git's global options: each Command keeps
// the command as written and after each wrapper (Views).
//
// What cannot be known without running the command is marked, not
// guessed: a word holding an expansion is Dynamic, a glob is Glob, a
// command whose program or script is unknown has Unknown set, and one that
// runs code the reading does not see (inline code, a script file, make's
// recipes, a git alias) has Opaque set. Command.Decides says whether the
// script's exit status depends on the command's: in `make test | tail`
// only tail decides, unless set -o pipefail is in effect.
//
// shell runs nothing and reads no files. It imports only mvdan.cc/sh and
// the standard library; it must not import other apserver packages.
package shell
