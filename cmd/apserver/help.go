package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// printFlags writes fs's flags the way the docs and Codex write them: a
// one-letter flag with one dash (-o), every other with two (--data-dir),
// then the value's kind and the usage line, and the default where there
// is one. Go's flag package accepts both spellings; its own PrintDefaults
// prints one dash, which the docs never use.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		kind, usage := flag.UnquoteUsage(f)
		line := "  " + dash + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintln(w, line)
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		fmt.Fprintf(w, "    \t%s", usage)
		if !zeroDefault(f) {
			if kind == "string" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(w, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w)
	})
}

// zeroDefault reports whether f's default is its type's zero value, which
// help leaves unsaid (as flag.PrintDefaults does).
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]", "<nil>":
		return true
	}
	t := reflect.TypeOf(f.Value)
	if t.Kind() == reflect.Pointer {
		z := reflect.New(t.Elem())
		if s, ok := z.Interface().(flag.Value); ok {
			return f.DefValue == s.String()
		}
	}
	return false
}
