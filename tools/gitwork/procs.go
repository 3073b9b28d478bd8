package gitwork

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What a git left running by a killed apserver is doing is read from
// /proc (Linux, like the rest of apserver's tools). Without /proc every
// lock counts as held and every worktree as busy: nothing is cleared.

func procAvailable() bool {
	_, err := os.ReadDir("/proc/self/fd")
	return err == nil
}

// pids lists the numeric entries of /proc.
func pids() []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var list []string
	for _, e := range entries {
		if n := e.Name(); n[0] >= '0' && n[0] <= '9' {
			list = append(list, n)
		}
	}
	return list
}

// fileInUse reports whether a process has path open.
func fileInUse(path string) bool {
	if !procAvailable() {
		return true
	}
	want := canonical(path)
	for _, pid := range pids() {
		fdDir := filepath.Join("/proc", pid, "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to look at
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && (target == path || target == want) {
				return true
			}
		}
	}
	return false
}

// gitRunning reports whether a live git process has all of args among its
// arguments (a zombie's command line is empty and does not count).
func gitRunning(args ...string) bool {
	if !procAvailable() {
		return true
	}
	for _, pid := range pids() {
		cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		argv := bytes.Split(bytes.TrimSuffix(cmdline, []byte{0}), []byte{0})
		if filepath.Base(string(argv[0])) != "git" {
			continue
		}
		all := true
		for _, a := range args {
			if !slices.ContainsFunc(argv, func(b []byte) bool { return string(b) == a }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// gitInDir reports whether a live git process runs in dir (its working
// directory).
func gitInDir(dir string) bool {
	if !procAvailable() {
		return true
	}
	want := canonical(dir)
	for _, pid := range pids() {
		cwd, err := os.Readlink(filepath.Join("/proc", pid, "cwd"))
		if err != nil || (cwd != dir && cwd != want) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if filepath.Base(string(argv0)) == "git" {
			return true
		}
	}
	return false
}

// settled holds the keys settle has waited for in this process.
var settled sync.Map

// settle waits, the first time this process asks for key, until busy says
// no more (for at most busyWait). The gits it waits for were left running
// by a killed apserver: within one process, gitwork waits for every git
// it starts, so once they are gone no other can appear.
func settle(ctx context.Context, key string, busy func() bool) error {
	if _, ok := settled.Load(key); ok {
		return nil
	}
	deadline := time.Now().Add(busyWait)
	for busy() && time.Now().Before(deadline) {
		if err := pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	settled.Store(key, true)
	return nil
}

// procStat reads the state and the process group of pid from
// /proc/pid/stat.
func procStat(pid string) (state string, pgrp int, ok bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid pgrp ...: comm may hold anything but ends at
	// the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0], pgrp, err == nil
}

// processGroup is the process group of a live pid, or 0.
func processGroup(pid int) int {
	state, pgrp, ok := procStat(strconv.Itoa(pid))
	if !ok || state == "Z" {
		return 0
	}
	return pgrp
}

// withEnv lists the live (not zombie) processes whose environment holds
// entry ("NAME=value") exactly.
func withEnv(entry string) []int {
	var found []int
	for _, pid := range pids() {
		environ, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		if err != nil || !slices.ContainsFunc(bytes.Split(environ, []byte{0}), func(kv []byte) bool { return string(kv) == entry }) {
			continue
		}
		if state, _, ok := procStat(pid); ok && state != "Z" {
			n, _ := strconv.Atoi(pid)
			found = append(found, n)
		}
	}
	return found
}

// groupMembers lists the live (not zombie) processes of process group
// pgid; with under set, only if one of them works in under or below it
// (so that a reused group id of someone else's is not taken for ours).
func groupMembers(pgid int, under string) []int {
	var members []int
	inside := under == ""
	want := canonical(under)
	for _, pid := range pids() {
		state, pgrp, ok := procStat(pid)
		if !ok || state == "Z" || pgrp != pgid {
			continue
		}
		n, _ := strconv.Atoi(pid)
		members = append(members, n)
		if !inside {
			if cwd, err := os.Readlink(filepath.Join("/proc", pid, "cwd")); err == nil && (cwd == want || strings.HasPrefix(cwd, want+string(filepath.Separator))) {
				inside = true
			}
		}
	}
	if !inside {
		return nil
	}
	return members
}
