package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEnforceable(t *testing.T) {
	ok := Support{LandlockABI: 7, UserNS: true}
	noNS := Support{LandlockABI: 7, Err: errors.New("EPERM")}
	tests := []struct {
		s    Support
		p    Policy
		want string // substring of the error; "" for nil
	}{
		{ok, Policy{Mode: ReadOnly}, ""},
		{ok, Policy{Mode: WorkspaceWrite, Network: true}, ""},
		{Support{}, Policy{Mode: FullAccess}, ""},
		{ok, Policy{Mode: "open"}, `unknown mode "open"`},
		{ok, Policy{}, `unknown mode ""`},
		{Support{UserNS: true}, Policy{Mode: ReadOnly}, "Landlock is not available (kernel too old or disabled)"},
		{Support{LandlockABI: 5, UserNS: true}, Policy{Mode: WorkspaceWrite}, "Landlock ABI 5 is too old"},
		{noNS, Policy{Mode: ReadOnly}, "user namespaces are not available: EPERM"},
		{noNS, Policy{Mode: WorkspaceWrite, Network: true}, "user namespaces are not available"},
	}
	for _, tt := range tests {
		err := tt.s.Enforceable(tt.p)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v.Enforceable(%+v) = %v, want %q", tt.s, tt.p, err, tt.want)
		}
	}
}

func TestProbeMatchesKernel(t *testing.T) {
	s := Probe()
	if s != Probe() {
		t.Fatalf("Probe() is not cached: %+v", s)
	}
	if got := landlockABI(); s.LandlockABI != got {
		t.Errorf("Probe().LandlockABI = %d, want %d", s.LandlockABI, got)
	}
	if s.UserNS != (s.Err == nil) {
		t.Errorf("Probe() = %+v: UserNS and Err disagree", s)
	}
}

func rulePaths(pl plan, access uint64) []string {
	var paths []string
	for _, r := range pl.Rules {
		if r.Access&access == access {
			paths = append(paths, r.Path)
		}
	}
	return paths
}

func TestNewPlan(t *testing.T) {
	base := t.TempDir()
	ws, extra, home, tmp := filepath.Join(base, "ws"), filepath.Join(base, "extra"), filepath.Join(base, "home"), filepath.Join(base, "tmp")
	for _, d := range []string{ws, extra, home, tmp, filepath.Join(ws, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=/nope", "HOME=" + home, "TMPDIR=" + tmp, "PATH="}
	p := Policy{
		Mode:          WorkspaceWrite,
		WritableRoots: []string{filepath.Join(ws, "sub"), link, filepath.Join(base, "missing")},
		ReadableRoots: []string{extra},
		AllowTmp:      true,
	}
	pl, err := newPlan(p, ws, env)
	if err != nil {
		t.Fatal(err)
	}
	wantWritable := []string{"/tmp", tmp, ws, filepath.Join(ws, "sub")}
	slices.SortStableFunc(wantWritable, func(a, b string) int { return len(a) - len(b) })
	if !slices.Equal(pl.Writable, wantWritable) {
		t.Errorf("Writable = %q, want %q", pl.Writable, wantWritable)
	}
	if got := rulePaths(pl, fsWrite); !slices.Equal(got, pl.Writable) {
		t.Errorf("write rules on %q, want %q", got, pl.Writable)
	}
	readable := rulePaths(pl, fsRead)
	for _, want := range []string{"/usr", "/etc", "/proc", ws, extra, filepath.Join(home, ".cargo"), filepath.Join(home, "go")} {
		if !slices.Contains(readable, want) {
			t.Errorf("%s is not readable; readable: %q", want, readable)
		}
	}
	for _, r := range pl.Rules {
		if r.Path == home || r.Path == "/" || r.Path == "/var" || r.Path == "/var/tmp" || r.Path == "/nope/go" {
			t.Errorf("rule %+v: %s must not be granted", r, r.Path)
		}
		if strings.HasPrefix(r.Path, "/dev/") && r.Access&fsWrite&^accessDevRW != 0 {
			t.Errorf("rule %+v grants more than read/write on a device", r)
		}
	}
	if !pl.NoNetwork {
		t.Errorf("plan %+v: want NoNetwork", pl)
	}

	// Read-only: nothing writable, writable roots readable, AllowTmp ignored.
	p.Mode = ReadOnly
	pl, err = newPlan(p, ws, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Writable) != 0 {
		t.Errorf("read-only plan has writable mounts %q", pl.Writable)
	}
	for _, r := range pl.Rules {
		if r.Access&fsWrite != 0 && !strings.HasPrefix(r.Path, "/dev/") {
			t.Errorf("read-only plan grants %+v", r)
		}
	}
	if readable := rulePaths(pl, fsRead); !slices.Contains(readable, link) || slices.Contains(readable, "/tmp") {
		t.Errorf("read-only readable = %q", readable)
	}

	for _, bad := range []Policy{
		{Mode: WorkspaceWrite, WritableRoots: []string{"rel"}},
		{Mode: ReadOnly, ReadableRoots: []string{"rel"}},
	} {
		if _, err := newPlan(bad, ws, env); err == nil {
			t.Errorf("newPlan(%+v): no error for a relative root", bad)
		}
	}
}

func TestFindGoroot(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "sdk", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "go"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(bin, "go"), filepath.Join(links, "go")); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{"relative", dir, links}, string(filepath.ListSeparator))
	if got, want := findGoroot(path), filepath.Join(dir, "sdk"); got != want {
		t.Errorf("findGoroot(%q) = %q, want %q", path, got, want)
	}
	if got := findGoroot(dir); got != "" {
		t.Errorf("findGoroot(%q) = %q, want \"\"", dir, got)
	}
}

func TestCommandFullAccess(t *testing.T) {
	dir := t.TempDir()
	cmd, err := Command(context.Background(), Policy{Mode: FullAccess}, dir, []string{"A=b"}, "/bin/bash", "echo $A")
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != "/bin/bash" || !slices.Equal(cmd.Args, []string{"bash", "-c", "echo $A"}) || cmd.Dir != dir ||
		!cmd.SysProcAttr.Setpgid || cmd.SysProcAttr.Cloneflags != 0 {
		t.Fatalf("Command = %+v", cmd)
	}
	if out, err := cmd.Output(); err != nil || string(out) != "b\n" {
		t.Fatalf("output %q, %v", out, err)
	}
}

func TestCommandRejects(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		p          Policy
		dir, shell string
	}{
		{Policy{Mode: "bogus"}, dir, "/bin/bash"},
		{Policy{Mode: ReadOnly}, "rel", "/bin/bash"},
		{Policy{Mode: ReadOnly}, dir, "bash"},
		{Policy{Mode: WorkspaceWrite, WritableRoots: []string{"rel"}}, dir, "/bin/bash"},
	} {
		if cmd, err := Command(context.Background(), tt.p, tt.dir, nil, tt.shell, "true"); err == nil {
			t.Errorf("Command(%+v, %q, %q) = %v, want an error", tt.p, tt.dir, tt.shell, cmd.Args)
		}
	}
}

// TestHelperFailsClosed checks that a helper that cannot confine itself
// exits 126 with a message instead of running the command.
func TestHelperFailsClosed(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, args := range [][]string{
		{helperArg, "{not json", "--", "/bin/touch", marker},
		{helperArg, "{}", "/bin/touch", marker},
		// Nothing granted: not even the exec is allowed.
		{helperArg, `{"writable":["relative"]}`, "--", "/bin/touch", marker},
	} {
		cmd := exec.Command("/proc/self/exe", args...)
		cmd.SysProcAttr = helperCmd(context.Background(), nil, nil, true).SysProcAttr
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 126 || !strings.HasPrefix(string(out), "apserver sandbox: ") {
			t.Errorf("helper %q: %v, output %q; want exit 126 and a message", args[1:], err, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("helper %q ran the command", args[1:])
		}
	}
}

// TestEachLayerHolds runs writes to an outside directory with only one
// filesystem layer in the way: Landlock alone (the directory's mount is
// left writable) and the read-only mounts alone (Landlock lets the
// directory be written). Metadata changes are only stopped by the mounts.
func TestEachLayerHolds(t *testing.T) {
	if err := Probe().Enforceable(Policy{Mode: WorkspaceWrite}); err != nil {
		t.Skip(err)
	}
	base, err := os.MkdirTemp("/var/tmp", "apserver-layers-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	pl, err := newPlan(Policy{Mode: WorkspaceWrite, WritableRoots: []string{ws}}, ws, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	landlockOnly, mountsOnly := pl, pl
	landlockOnly.Writable = append(slices.Clone(pl.Writable), out)
	mountsOnly.Rules = append(slices.Clone(pl.Rules), pathRule{Path: out, Access: fsRead | fsWrite})

	writes := []string{
		`echo x > "$OUT/new"`, `echo x >> "$OUT/f"`, `truncate -s 0 "$OUT/f"`, `rm "$OUT/f"`,
		`mkdir "$OUT/d"`, `ln -s f "$OUT/l"`, `mv "$OUT/f" "$OUT/g"`, `mkfifo "$OUT/p"`,
	}
	metadata := []string{`chmod 600 "$OUT/f"`, `touch -d 2001-01-01 "$OUT/f"`}
	for _, tt := range []struct {
		name    string
		pl      plan
		scripts []string
	}{
		{"landlock-only", landlockOnly, writes},
		{"mounts-only", mountsOnly, append(writes, metadata...)},
	} {
		for _, script := range tt.scripts {
			for _, d := range []string{ws, out} {
				if err := os.RemoveAll(d); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			f := filepath.Join(out, "f")
			if err := os.WriteFile(f, []byte("data\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadDir(out)
			fiBefore, _ := os.Stat(f)
			arg, err := json.Marshal(tt.pl)
			if err != nil {
				t.Fatal(err)
			}
			cmd := helperCmd(context.Background(), arg, []string{"/bin/bash", "-c", script}, true)
			cmd.Dir, cmd.Env = ws, append(os.Environ(), "OUT="+out)
			outp, err := cmd.CombinedOutput()
			after, _ := os.ReadDir(out)
			fiAfter, _ := os.Stat(f)
			data, _ := os.ReadFile(f)
			if err == nil || len(after) != len(before) || string(data) != "data\n" ||
				fiAfter.Mode() != fiBefore.Mode() || !fiAfter.ModTime().Equal(fiBefore.ModTime()) {
				t.Errorf("%s: %q was not stopped: %v, output %q", tt.name, script, err, outp)
			}
		}
	}
}

// TestLandlockDeniesTCP checks the Landlock half of "no network" on its
// own: without a network namespace, a NoNetwork ruleset still stops a TCP
// connect that works with network allowed.
func TestLandlockDeniesTCP(t *testing.T) {
	if err := Probe().Enforceable(Policy{Mode: ReadOnly}); err != nil {
		t.Skip(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dir := t.TempDir()
	script := "exec 3<>/dev/tcp/" + strings.ReplaceAll(l.Addr().String(), ":", "/") + " && echo connected"
	for _, noNet := range []bool{false, true} {
		pl, err := newPlan(Policy{Mode: ReadOnly, Network: !noNet}, dir, os.Environ())
		if err != nil {
			t.Fatal(err)
		}
		arg, err := json.Marshal(pl)
		if err != nil {
			t.Fatal(err)
		}
		cmd := helperCmd(context.Background(), arg, []string{"/bin/bash", "-c", script}, false)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		if connected := strings.Contains(string(out), "connected"); connected == noNet {
			t.Errorf("NoNetwork %v, no network namespace: output %q", noNet, out)
		}
	}
}

// TestNewPlanProtections checks the plan's parts that keep sockets, .git
// and .apserver out of reach (the attack corpus checks their effect).
func TestNewPlanProtections(t *testing.T) {
	base := t.TempDir()
	ws, extra := filepath.Join(base, "ws"), filepath.Join(base, "extra")
	for _, d := range []string{ws, extra} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=/nonexistent", "PATH="}
	p := Policy{Mode: WorkspaceWrite, WritableRoots: []string{ws}, ReadableRoots: []string{extra}}
	pl, err := newPlan(p, ws, env)
	if err != nil {
		t.Fatal(err)
	}
	if pl.NoUnixSockets || !slices.Equal(pl.Overlays, []string{extra}) || !slices.Equal(pl.Protect, []string{ws}) || !pl.ProtectGit {
		t.Errorf("workspace-write plan: NoUnixSockets %v, Overlays %q, Protect %q, ProtectGit %v; want false, [extra], [ws], true",
			pl.NoUnixSockets, pl.Overlays, pl.Protect, pl.ProtectGit)
	}
	if !slices.Contains(pl.Masks, "/tmp") {
		t.Errorf("Masks = %q, want /tmp among them", pl.Masks)
	}
	p.WritableGit = true
	if pl, _ := newPlan(p, ws, env); pl.ProtectGit || len(pl.Protect) != 1 {
		t.Errorf("WritableGit plan: Protect %q, ProtectGit %v; want .apserver still protected, .git not", pl.Protect, pl.ProtectGit)
	}
	p.Mode = ReadOnly
	if pl, _ := newPlan(p, ws, env); !pl.NoUnixSockets || len(pl.Overlays) != 0 || len(pl.Protect) != 0 {
		t.Errorf("read-only plan: NoUnixSockets %v, Overlays %q, Protect %q; want true and none", pl.NoUnixSockets, pl.Overlays, pl.Protect)
	}
}
