package port

import "fmt"

// EOFMode is what the threads do with the work in flight when the
// client's input ends (apserver --on-eof); session's Drain carries it out.
type EOFMode int

const (
	// EOFDrain lets running turns go on to their end; a request that needs
	// the client is cancelled (the turn stops interrupted). For scripts.
	EOFDrain EOFMode = iota
	// EOFInterrupt interrupts running turns at once, and kills running
	// command/exec processes (InputClosed). For editors, which close
	// stdin to shut apserver down.
	EOFInterrupt
)

func (e EOFMode) String() string {
	if e == EOFInterrupt {
		return "interrupt"
	}
	return "drain"
}

// ParseEOFMode reads "drain" or "interrupt".
func ParseEOFMode(s string) (EOFMode, error) {
	switch s {
	case "drain":
		return EOFDrain, nil
	case "interrupt":
		return EOFInterrupt, nil
	}
	return EOFDrain, fmt.Errorf("unknown end-of-input mode %q (want drain or interrupt)", s)
}
