package tools

import "strings"

// This file is a deliberately small reader for a subset of bash: simple
// commands made of words, joined by ;, &&, ||, | or newlines. Anything else
// (redirections, expansions that could run code or inject arguments,
// subshells, groups, background jobs, here-documents, control flow spelled
// with operators) makes the parse fail, and callers treat failure as "not
// understood". Reserved words such as `if` simply come out as program names
// nobody recognizes.

// shWord is one word after quote removal.
type shWord struct {
	text string
	// glob: the word contains an unquoted *, ? or [ and may expand to
	// several file names.
	glob bool
	// flagGlob: the word is a glob that may expand to a name beginning with
	// '-', i.e. to something a program would read as an option. True when
	// the text before the first glob character is empty or starts with '-'.
	flagGlob bool
}

// shCommand is one simple command.
type shCommand struct {
	words []shWord
	// piped: the command reads the output of the previous one (it follows |).
	piped bool
}

func (c shCommand) args() []string {
	out := make([]string, len(c.words))
	for i, w := range c.words {
		out[i] = w.text
	}
	return out
}

// parseShell splits script into simple commands. ok is false when the script
// uses anything outside the subset described above, or is empty.
func parseShell(script string) (cmds []shCommand, ok bool) {
	var (
		cur      shCommand
		word     strings.Builder
		inWord   bool
		glob     bool
		flagGlob bool
		needCmd  bool // after &&, || or |: a command must follow
	)
	endWord := func() {
		if inWord {
			cur.words = append(cur.words, shWord{text: word.String(), glob: glob, flagGlob: flagGlob})
		}
		word.Reset()
		inWord, glob, flagGlob = false, false, false
	}
	// endCmd closes the current command before ; or a newline. An empty
	// command there is an error.
	endCmd := func() bool {
		endWord()
		if len(cur.words) == 0 {
			return false
		}
		cmds = append(cmds, cur)
		cur = shCommand{}
		needCmd = false
		return true
	}
	// op closes the current command, which must not be empty, before an
	// operator that needs a command on its right.
	op := func(piped bool) bool {
		endWord()
		if len(cur.words) == 0 {
			return false
		}
		cmds = append(cmds, cur)
		cur = shCommand{piped: piped}
		needCmd = true
		return true
	}

	s := script
	for i := 0; i < len(s); {
		c := s[i]
		next := byte(0)
		if i+1 < len(s) {
			next = s[i+1]
		}
		switch c {
		case ' ', '\t':
			endWord()
			i++
		case '\n':
			endWord()
			if len(cur.words) > 0 && !endCmd() {
				return nil, false
			}
			i++
		case ';':
			if next == ';' || next == '&' || !endCmd() {
				return nil, false
			}
			i++
		case '&':
			if next != '&' || !op(false) {
				return nil, false
			}
			i += 2
		case '|':
			switch next {
			case '|':
				if !op(false) {
					return nil, false
				}
				i += 2
			case '&':
				return nil, false
			default:
				if !op(true) {
					return nil, false
				}
				i++
			}
		case '<', '>', '(', ')', '`', '{', '}':
			return nil, false
		case '#':
			if inWord {
				word.WriteByte(c)
				i++
				continue
			}
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			word.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case '"':
			j, ok := readDoubleQuoted(s, i+1, &word)
			if !ok {
				return nil, false
			}
			inWord = true
			i = j
		case '\\':
			switch {
			case i+1 >= len(s):
				return nil, false
			case next == '\n': // line continuation
			default:
				word.WriteByte(next)
				inWord = true
			}
			i += 2
		case '$':
			if !literalDollar(next) {
				return nil, false
			}
			word.WriteByte(c)
			inWord = true
			i++
		case '*', '?', '[':
			if !glob {
				prefix := word.String()
				flagGlob = prefix == "" || prefix[0] == '-'
			}
			glob = true
			word.WriteByte(c)
			inWord = true
			i++
		default:
			word.WriteByte(c)
			inWord = true
			i++
		}
	}
	endWord()
	if len(cur.words) > 0 {
		cmds = append(cmds, cur)
	} else if needCmd {
		return nil, false
	}
	return cmds, len(cmds) > 0
}

// readDoubleQuoted reads a "..." string whose body starts at s[i], appending
// its value to w. It returns the index after the closing quote.
func readDoubleQuoted(s string, i int, w *strings.Builder) (int, bool) {
	for i < len(s) {
		c := s[i]
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(s) {
				return 0, false
			}
			switch n := s[i+1]; n {
			case '$', '`', '"', '\\':
				w.WriteByte(n)
			case '\n':
			default:
				w.WriteByte('\\')
				w.WriteByte(n)
			}
			i += 2
		case '`':
			return 0, false
		case '$':
			next := byte(0)
			if i+1 < len(s) {
				next = s[i+1]
			}
			if !literalDollar(next) && next != '"' {
				return 0, false
			}
			w.WriteByte(c)
			i++
		default:
			w.WriteByte(c)
			i++
		}
	}
	return 0, false
}

// literalDollar reports whether a '$' followed by next is a plain dollar sign
// rather than the start of an expansion.
func literalDollar(next byte) bool {
	switch next {
	case 0, ' ', '\t', '\n', ';', '&', '|':
		return true
	}
	return false
}

// ShellQuote quotes s for bash if it needs quoting.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	plain := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("_-./:=@%+,", c) >= 0) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellJoin renders words as one command line.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// DisplayCommand renders cmd the way it is run, for display in an approval
// request. Single quotes in cmd are escaped by closing the quote, adding an
// escaped quote and reopening it:
//
//	DisplayCommand("echo 'hi'") == `/bin/bash -c 'echo '\''hi'\'''`
func DisplayCommand(cmd string) string {
	return shellPath + " -c '" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
}
