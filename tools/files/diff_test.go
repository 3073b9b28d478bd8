package files

import "testing"

// The diff itself is tools/patch's (tested there, including against git
// apply); this checks the cases files adds on top.
func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"one line", "a\n", "b\n", "@@ -1 +1 @@\n-a\n+b\n"},
		{"binary", "a\x00", "b\x00", "Binary files differ\n"},
	}
	for _, tt := range tests {
		if got := unifiedDiff([]byte(tt.old), []byte(tt.new)); got != tt.want {
			t.Errorf("%s: unifiedDiff(%q, %q) = %q, want %q", tt.name, tt.old, tt.new, got, tt.want)
		}
	}
}
