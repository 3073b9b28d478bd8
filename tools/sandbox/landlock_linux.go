package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Landlock filesystem access rights, as granted by the plan's rules.
const (
	fsRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	fsWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir |
		ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
	// fsFileRights are the rights that apply to a file (not a directory).
	fsFileRights = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev

	accessDevDir = ll.AccessFSReadDir
	accessDevRW  = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	accessTTY    = accessDevRW | ll.AccessFSIoctlDev
)

// landlockABI returns the Landlock ABI version the kernel offers, as
// Go-Landlock counts it: an ABI 6+ kernel without the fix for erratum 2
// (signal scoping) counts as ABI 5, and Go-Landlock would refuse the
// ABI 6 ruleset there.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	if v >= 6 {
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&2 == 0 {
			v = 5
		}
	}
	return v
}

// restrict enforces pl's Landlock ruleset on the process and sets
// no_new_privs. The ruleset handles every ABI 6 right, so whatever no rule
// grants is denied: writes outside the writable roots, making device
// nodes (granted nowhere), ioctls on devices (granted on terminals only),
// TCP bind and connect with NoNetwork, and signals and abstract unix
// sockets reaching outside the sandbox.
func restrict(pl plan) error {
	cfg := landlock.V6
	if !pl.NoNetwork {
		cfg.HandledAccessNet = 0
	}
	var rules []landlock.Rule
	for _, r := range pl.Rules {
		fi, err := os.Stat(r.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue // nothing to grant
			}
			return fmt.Errorf("rule for %s: %w", r.Path, err)
		}
		access := r.Access
		if !fi.IsDir() {
			access &= fsFileRights
		}
		if access != 0 {
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(access), r.Path).IgnoreIfMissing())
		}
	}
	return cfg.Restrict(rules...)
}
