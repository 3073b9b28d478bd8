package agenttools

import "testing"

func TestPatchCommand(t *testing.T) {
	const p = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"
	for _, tc := range []struct {
		cmd, want string
		ok        bool
	}{
		{"apply_patch <<'EOF'\n" + p + "\nEOF\n", "apply_patch <<'EOF'\n" + p + "\nEOF", true},
		{"  applypatch <<EOF\n" + p + "\nEOF", "applypatch <<EOF\n" + p + "\nEOF", true},
		{"apply_patch '" + p + "'", p, true},
		{`apply_patch "` + p + `"`, p, true},
		{"apply_patch", "", false},
		{"apply_patches <<EOF\nx\nEOF", "", false},
		{"echo apply_patch <<EOF", "", false},
		{"apply_patch file.diff", "", false},
	} {
		got, ok := PatchCommand(tc.cmd)
		if ok != tc.ok || got != tc.want {
			t.Errorf("PatchCommand(%q) = %q, %v; want %q, %v", tc.cmd, got, ok, tc.want, tc.ok)
		}
	}
}
