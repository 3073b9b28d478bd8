package brain

import (
	"path"
	"strings"
)

// Match reports whether the slash-separated path p matches the glob pat:
// path.Match's syntax per segment, and `**` for any number of segments. A
// pattern without a slash also matches the base name anywhere
// ("*.sql" matches "db/migrations/1.sql").
func Match(pat, p string) bool {
	pat = strings.TrimPrefix(strings.TrimSpace(pat), "./")
	p = strings.TrimPrefix(p, "./")
	if pat == "" {
		return false
	}
	if !strings.Contains(pat, "/") {
		ok, _ := path.Match(pat, path.Base(p))
		if ok {
			return true
		}
	}
	if strings.HasSuffix(pat, "/") {
		pat += "**"
	}
	return matchSegs(strings.Split(pat, "/"), strings.Split(p, "/"))
}

func matchSegs(pat, p []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if matchSegs(pat[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], p[0]); !ok {
			return false
		}
		pat, p = pat[1:], p[1:]
	}
	return len(p) == 0
}

// MatchAny reports whether p matches one of the globs.
func MatchAny(globs []string, p string) bool {
	for _, g := range globs {
		if Match(g, p) {
			return true
		}
	}
	return false
}
