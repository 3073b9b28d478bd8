package tools

import (
	"regexp"
	"strings"
)

// IsKnownSafe reports whether command only reads, so that it may run without
// asking under the "untrusted" approval policy. It accepts one simple command,
// or several joined by &&, ||, ; or |, each running a known read-only program
// with arguments that cannot make it write or run other programs. Any
// redirection, command or process substitution, parameter expansion, subshell,
// group, background job, environment assignment, unknown program, or anything
// the parser does not understand makes it false.
//
// Unquoted globs are allowed, except where an expansion could begin with '-'
// (such as `*` or `-*`) and the program has options that write or execute;
// quote the pattern or give it a prefix (`./*`) there.
func IsKnownSafe(command string) bool {
	cmds, ok := parseShell(command)
	if !ok {
		return false
	}
	for _, c := range cmds {
		if !isSafeSimpleCommand(c) {
			return false
		}
	}
	return true
}

// optionFree lists programs none of whose options write files or run other
// programs, so any argument, including a glob expanding to an option, is
// harmless.
var optionFree = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true,
	"pwd": true, "echo": true, "printf": true, "true": true, "false": true,
	"which": true, "stat": true, "du": true, "df": true, "cut": true, "tr": true,
	"diff": true, "uname": true, "nl": true, "cd": true,
}

var sedPrintRange = regexp.MustCompile(`^(\d+|\$)(,(\d+|\$))?p$`)

func isSafeSimpleCommand(c shCommand) bool {
	prog := c.words[0]
	if prog.glob {
		return false
	}
	args := c.args()[1:]
	if !optionFree[prog.text] {
		for _, w := range c.words[1:] {
			if w.flagGlob {
				return false
			}
		}
	}
	switch prog.text {
	case "ls", "cat", "head", "tail", "wc", "grep", "pwd", "echo", "printf",
		"true", "false", "which", "stat", "du", "df", "cut", "tr", "diff",
		"uname", "nl", "cd":
		return true
	case "env":
		return len(args) == 0
	case "date":
		return !hasOption(args, "s", "set")
	case "file":
		return !hasOption(args, "C", "compile")
	case "sort":
		return !hasOption(args, "o", "output", "compress-program")
	case "uniq":
		return uniqIsSafe(c.words[1:])
	case "rg":
		return !hasOption(args, "z", "pre", "hostname-bin", "search-zip")
	case "find":
		for _, a := range args {
			switch a {
			case "-exec", "-execdir", "-ok", "-okdir", "-delete",
				"-fls", "-fprint", "-fprint0", "-fprintf":
				return false
			}
		}
		return true
	case "sed":
		// Only `sed -n <range>p [file...]`: sed scripts can write (w) and
		// execute (e), so nothing else is accepted.
		if len(args) < 2 || args[0] != "-n" || !sedPrintRange.MatchString(args[1]) {
			return false
		}
		for _, a := range args[2:] {
			if strings.HasPrefix(a, "-") {
				return false
			}
		}
		return true
	case "git":
		return gitIsSafe(args)
	}
	return false
}

// hasOption reports whether args contain one of the given short options
// (letters, possibly bundled like -xo or with an attached value) or long
// options. A long option also matches by any prefix of its name, since
// getopt_long and git accept unambiguous abbreviations.
//
// Every argument is checked, including those after "--" and those that are
// really option values; that can only make the answer more cautious.
func hasOption(args []string, short string, long ...string) bool {
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if name == "" {
				continue
			}
			for _, l := range long {
				if strings.HasPrefix(l, name) {
					return true
				}
			}
			continue
		}
		if len(a) > 1 && a[0] == '-' && strings.ContainsAny(a[1:], short) {
			return true
		}
	}
	return false
}

// uniqIsSafe: uniq writes its second operand, so at most one operand is
// allowed, and globs (which may expand to several) are not.
func uniqIsSafe(words []shWord) bool {
	operands := 0
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w.glob, w.text == "--":
			return false
		case w.text == "-f" || w.text == "-s" || w.text == "-w" ||
			w.text == "--skip-fields" || w.text == "--skip-chars" || w.text == "--check-chars":
			i++ // the option's value
		case strings.HasPrefix(w.text, "-") && w.text != "-":
		default:
			operands++
		}
	}
	return operands <= 1
}

// gitIsSafe accepts git status, log, diff, show, and branch when it only
// lists, optionally after --no-pager. Other global options (-c, -C,
// --git-dir, ...) are refused: -c alone can make git run arbitrary programs.
func gitIsSafe(args []string) bool {
	for len(args) > 0 && (args[0] == "--no-pager" || args[0] == "-P") {
		args = args[1:]
	}
	if len(args) == 0 {
		return false
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "status":
		return true
	case "log", "diff", "show":
		return !hasOption(rest, "", "output", "ext-diff")
	case "branch":
		return gitBranchListsOnly(rest)
	}
	return false
}

// gitBranchListsOnly reports whether git branch args only list branches.
// Without a listing option, a name argument would create a branch.
func gitBranchListsOnly(args []string) bool {
	listing, operands := false, 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--list":
			listing = true
		case a == "--contains" || a == "--no-contains" || a == "--merged" ||
			a == "--no-merged" || a == "--points-at":
			listing = true
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
		case a == "--sort" || a == "--format":
			i++
		case hasAnyPrefix(a, "--contains=", "--no-contains=", "--merged=", "--no-merged=", "--points-at="):
			listing = true
		case a == "--all" || a == "--remotes" || a == "--verbose" || a == "--show-current" ||
			a == "--ignore-case" || a == "--omit-empty" || a == "--no-abbrev" ||
			hasAnyPrefix(a, "--color", "--no-color", "--column", "--no-column", "--sort=", "--format=", "--abbrev="):
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], "arvil") == "":
			if strings.Contains(a, "l") {
				listing = true
			}
		case strings.HasPrefix(a, "-"):
			return false
		default:
			operands++
		}
	}
	return operands == 0 || listing
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
