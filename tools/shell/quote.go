package shell

import "strings"

// Quote quotes s for bash if it needs quoting.
func Quote(s string) string {
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

// Join renders words as one command line, quoting each as needed.
func Join(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// Script renders the command line that runs script with the shell at
// shellPath, `/bin/bash -c 'script'`, always quoting the script. Parse
// reads it back as the shell and the commands of script.
func Script(shellPath, script string) string {
	return shellPath + " -c '" + strings.ReplaceAll(script, "'", `'\''`) + "'"
}
