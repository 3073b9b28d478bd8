package blueprint

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestPages: the decisions of a paged answer, driven by answers alone.
// An answer "n:c" is a valid page with item n and cursor c; "bad" is
// refused.
func TestPages(t *testing.T) {
	many := []string{}
	for i := 0; i < MaxPages; i++ {
		many = append(many, fmt.Sprintf("%d:c%d", i, i))
	}
	for _, tc := range []struct {
		name    string
		answers []string
		step    Step
		items   string
		err     string
		prompts string // cursor/strict of each prompt
	}{
		{"one page", []string{"1:"}, Done, "[1]", "", "[/]"},
		{"three pages", []string{"1:a", "2:b", "3:"}, Done, "[1 2 3]", "", "[/ a/ b/]"},
		{"retry then ok", []string{"1:a", "bad", "2:"}, Done, "[1 2]", "", "[/ a/ a/refused]"},
		{"retry resets per page", []string{"bad", "1:a", "bad", "2:"}, Done, "[1 2]", "", "[/ /refused a/ a/refused]"},
		{"bad twice", []string{"1:a", "bad", "bad"}, Failed, "[]", "refused (after a retry with a stricter instruction)", "[/ a/ a/refused]"},
		{"cursor twice", []string{"1:a", "2:a"}, Failed, "[]", `thing: cursor "a" given twice`, "[/ a/]"},
		{"too many pages", many, Failed, "[]", fmt.Sprintf("thing: more than %d pages", MaxPages), ""},
	} {
		var prompts []string
		p := NewPages("thing", func(cursor, strict string) string { return cursor + "/" + strict }, func(raw []byte) ([]int, string, error) {
			if string(raw) == "bad" {
				return nil, "", errors.New("refused")
			}
			var n int
			var c string
			parts := strings.SplitN(string(raw), ":", 2)
			fmt.Sscan(parts[0], &n)
			c = parts[1]
			return []int{n}, c, nil
		})
		for _, a := range tc.answers {
			if p.Step() != Ask {
				t.Fatalf("%s: step %s before the answers ran out", tc.name, p.Step())
			}
			prompts = append(prompts, p.Prompt())
			p.Feed([]byte(a))
		}
		items := fmt.Sprint(p.Items())
		if p.Items() == nil {
			items = "[]"
		}
		if p.Step() != tc.step || items != tc.items || (tc.prompts != "" && fmt.Sprint(prompts) != tc.prompts) {
			t.Errorf("%s: step %s items %s prompts %v, want %s %s %s", tc.name, p.Step(), items, prompts, tc.step, tc.items, tc.prompts)
		}
		if tc.err != "" && (p.Err() == nil || !strings.Contains(p.Err().Error(), tc.err)) {
			t.Errorf("%s: err %v, want %q", tc.name, p.Err(), tc.err)
		}
	}
}
