package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/store"
)

// headless is what a command that works on the data dir without a server
// needs (apserver blueprint, apserver project): logs on stderr at warn
// unless asked otherwise, the configuration of the current directory, and
// the store in the data dir, opened with the configured durability.
type headless struct {
	log     *slog.Logger
	cfg     config.Config
	cwd     string
	dataDir string
	st      *store.Store
	closers []func()
}

// openHeadless opens what f names; Close releases it.
func openHeadless(f *serveFlags) (*headless, error) {
	if f.logLevel == "info" {
		f.logLevel = "warn"
	}
	log, closeLog, err := newLogger(f)
	if err != nil {
		return nil, err
	}
	h := &headless{log: log, closers: []func(){closeLog}}
	h.cwd, _ = os.Getwd()
	if h.cfg, err = config.Load(config.LoadOptions{UserFile: f.configFile, Workspace: h.cwd, Getenv: execGetenv, Overrides: f.overrides()}); err != nil {
		h.Close()
		return nil, err
	}
	if h.dataDir, err = resolveDataDir(h.cfg); err == nil {
		err = os.MkdirAll(h.dataDir, 0o700)
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	sync := "NORMAL"
	if strings.EqualFold(h.cfg.Durability, "full") {
		sync = "FULL"
	}
	if h.st, err = store.Open(filepath.Join(h.dataDir, store.FileName), store.Options{Synchronous: sync}); err != nil {
		h.Close()
		return nil, err
	}
	h.closers = append(h.closers, func() { h.st.Close() })
	return h, nil
}

// Close closes the store, then the log.
func (h *headless) Close() {
	for i := len(h.closers) - 1; i >= 0; i-- {
		h.closers[i]()
	}
	h.closers = nil
}
