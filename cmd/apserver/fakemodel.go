package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/apserver/apserver/model/scripted"
)

// runFakeModel is `apserver fake-model`: the scripted OpenAI-compatible
// model that the tests and the demo use, served on 127.0.0.1 until the
// process is told to stop. It prints the base URL (ending in /v1) as the
// first line of stdout, so a test in another language (the editor
// extensions' tests) can start it, read the URL and point apserver at it
// with --base-url.
func runFakeModel(args []string) error {
	fs := flag.NewFlagSet("fake-model", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: apserver fake-model [--script FILE]

Serves the scripted OpenAI-compatible model (Responses and Chat Completions
streams) on 127.0.0.1 and prints its base URL on stdout. Without --script it
answers with the demo script. Stops on SIGINT/SIGTERM, or when stdin is a
pipe and it closes.

`)
		printFlags(fs.Output(), fs)
	}
	scriptFile := fs.String("script", "", "JSON script file (the form model/scripted.LoadScript reads)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	sc := scripted.DemoScript()
	if *scriptFile != "" {
		f, err := os.Open(*scriptFile)
		if err != nil {
			return fmt.Errorf("fake-model: %w", err)
		}
		sc, err = scripted.LoadScript(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("fake-model: %s: %w", *scriptFile, err)
		}
	}
	srv, err := scripted.Start(sc)
	if err != nil {
		return fmt.Errorf("fake-model: %w", err)
	}
	defer srv.Close()
	fmt.Println(srv.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A parent that talks to us through a pipe on stdin is gone when the
	// pipe closes: stop with it. (A stdin that is /dev/null or a terminal,
	// as for `apserver fake-model &` in a shell, is not watched.)
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		go func() {
			var b [1]byte
			for {
				if _, err := os.Stdin.Read(b[:]); err != nil {
					stop()
					return
				}
			}
		}()
	}
	<-ctx.Done()
	return nil
}
