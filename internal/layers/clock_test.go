package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// drivers are the packages whose time goes through one clock
// (internal/clock): the drivers and the cores they feed.
var drivers = []string{"session", "runner", "fullauto", "runs", "manager", "projects", "brains", "blueprints"}

// wallClockOK are the non-test files of drivers that may read the wall
// clock themselves, each with why.
var wallClockOK = map[string]string{
	"internal/clock/clock.go": "the clock's implementation",
}

var wallClock = regexp.MustCompile(`\btime\.(Now|Since|Until)\b`)

// TestNoTimeNowOutsideClock: the drivers and cores read the time only
// through their clock (internal/clock), so a fake clock drives them all in
// tests and the cores get the time as an argument.
func TestNoTimeNowOutsideClock(t *testing.T) {
	args := []string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}
	for _, d := range drivers {
		args = append(args, module+"/"+d+"/...")
	}
	args = append(args, module+"/internal/clock")
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root := ""
	files := 0
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, _ := strings.Cut(line, "\t")
		rel, _ := inModule(path)
		if rel == "internal/clock" {
			root = strings.TrimSuffix(filepath.ToSlash(dir), "/internal/clock")
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			files++
			key := rel + "/" + filepath.Base(name)
			if _, ok := wallClockOK[key]; ok {
				continue
			}
			for i, l := range strings.Split(string(b), "\n") {
				if wallClock.MatchString(l) && !strings.HasPrefix(strings.TrimSpace(l), "//") {
					found = append(found, key+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(l))
				}
			}
		}
	}
	if root == "" || files < 100 {
		t.Fatalf("scanned %d files (module root %q), want every driver's", files, root)
	}
	for _, f := range found {
		t.Errorf("%s\n\treads the wall clock; use the driver's clock (internal/clock)", f)
	}
}
