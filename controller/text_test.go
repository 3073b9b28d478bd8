package controller

import "testing"

func TestClaimsDone(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{"The task is complete.", true},
		{"I've finished implementing the --verbose flag; all tests pass.", true},
		{"I\u2019ve completed the refactor.", true},
		{"Done.", true},
		{"Done: hello.txt is created and verified.", true},
		{"Finished \u2014 the parser handles UTC offsets now.", true},
		{"Done reading the file; now fixing the bug.", false},
		{"Done: the parser. Next step: the docs.", false},
		{"All done! Let me know if you need anything else.", true},
		{"The goal has been achieved: the CLI prints debug output with --verbose.", true},
		{"Everything is in place and the tests pass.", true},
		{"", false},
		{"I'll run the tests once the build is done.", false},
		{"The task is not complete yet: docs remain.", false},
		{"Step 1 has been completed. Next, I will wire the logger.", false},
		{"I have completed the parser but the tests still fail.", false},
		{"I am blocked: the API key is missing, so the task cannot be completed.", false},
		{"Working on it.", false},
		{"TODO: tests. Otherwise the work is done.", false},
	} {
		if got := ClaimsDone(c.msg); got != c.want {
			t.Errorf("ClaimsDone(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}

func TestReviewVerdict(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want *bool
	}{
		{"APPROVED\nThe flag works.", ptr(true)},
		{"\n\n**Approved.** Nice work.", ptr(true)},
		{"CHANGES REQUESTED\n- docs missing", ptr(false)},
		{"## Changes requested: tests fail", ptr(false)},
		{"The change looks mostly fine.\nAPPROVED", nil},
		{"", nil},
	} {
		got := ReviewVerdict(c.msg)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("ReviewVerdict(%q) = %v, want %v", c.msg, fmtBool(got), fmtBool(c.want))
		}
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestClip(t *testing.T) {
	if got := clip("héllo wörld", 5); got != "héll…" {
		t.Errorf("clip = %q, want %q", got, "héll…")
	}
	if got := clip("short", 5); got != "short" {
		t.Errorf("clip = %q, want %q", got, "short")
	}
}
