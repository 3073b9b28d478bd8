// Package pgtest starts a throwaway PostgreSQL server for tests: initdb
// and pg_ctl in a temporary directory, listening on a unix socket in that
// directory only (no TCP). When the server binaries are missing it runs
// scripts/install-postgres.sh (which installs Debian's postgresql package
// where it can); where PostgreSQL still cannot be found the test is
// skipped with a message that says so. As root (Debian's initdb refuses
// root) the server runs as the user nobody, through runuser.
//
// pgtest imports only the standard library; it must not be imported by
// anything but tests.
package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Server is a PostgreSQL server of one test. It is stopped (and its
// directory removed) when the test ends.
type Server struct {
	// Dir holds the data directory (Dir/data), the socket and the log.
	Dir string
	// URL is the database URL of the server's postgres database for
	// pgx, over the unix socket.
	URL string
	bin string
	t   testing.TB
}

var (
	findOnce sync.Once
	binDir   string
	findErr  string
)

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() string {
	d, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// BinDir is the directory of PostgreSQL's server binaries, installing
// them first when missing; "" and why when there is none.
func BinDir() (string, string) {
	findOnce.Do(func() {
		root := moduleRoot()
		if root == "" {
			findErr = "no go.mod above the working directory, so no scripts/install-postgres.sh"
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "scripts", "install-postgres.sh"))
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			findErr = fmt.Sprintf("scripts/install-postgres.sh: %v: %s", err, stderr.String())
			return
		}
		binDir = string(bytes.TrimSpace(out))
		if binDir == "" {
			findErr = "PostgreSQL is not installed and could not be: " + stderr.String()
		}
	})
	return binDir, findErr
}

// Start starts a server for the test, or skips the test when PostgreSQL
// cannot be installed here.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, why := BinDir()
	if bin == "" {
		t.Skipf("skipping: no PostgreSQL server binaries (initdb, pg_ctl): %s", why)
	}
	// A short path: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: dir, bin: bin, t: t,
		URL: "postgres://postgres@/postgres?host=" + dir + "&sslmode=disable"}
	t.Cleanup(func() {
		s.pgctl("stop", "-m", "immediate")
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skipf("skipping: running as root, and there is no user nobody to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.command("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--no-instructions").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Start()
	return s
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

// command runs one of PostgreSQL's binaries, as nobody when this is root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "nobody", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (s *Server) pgctl(args ...string) ([]byte, error) {
	args = append(args, "-D", s.data(), "-w", "-t", "60")
	return s.command("pg_ctl", args...).CombinedOutput()
}

// Start starts the server (again): on the unix socket in Dir only, fsync
// off (a test's data need not survive the machine).
func (s *Server) Start() {
	s.t.Helper()
	opts := "-k " + s.Dir + " -c listen_addresses= -F -c max_connections=200"
	if out, err := s.pgctl("start", "-o", opts, "-l", filepath.Join(s.Dir, "log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		s.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Stop stops the server at once (as a crash would: pg_ctl -m immediate).
func (s *Server) Stop() {
	s.t.Helper()
	if out, err := s.pgctl("stop", "-m", "immediate"); err != nil {
		s.t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}
