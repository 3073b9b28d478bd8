package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLeavesOutTestMachinery: the server's binary does not link the
// schema validator the tests use. Its package init alone cost every start
// 3 ms and 1.7 MB of heap (GODEBUG=inittrace=1), and the demo, which
// links the fake editor, does not validate.
func TestBinaryLeavesOutTestMachinery(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "santhosh-tekuri/jsonschema") || strings.HasSuffix(pkg, "/internal/wirecheck") {
			t.Errorf("cmd/apserver links %s", pkg)
		}
	}
}
