package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

func TestRead(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	long := strings.Repeat("é", 2100)
	tree := map[string]string{
		"a.txt":     "one\ntwo\nthree",
		"crlf.txt":  "one\r\ntwo\r\n",
		"many.txt":  many.String(),
		"long.txt":  long + "\nshort\n",
		"empty.txt": "",
		"bin.dat":   "PNG\x00\x01\x02",
		"big.txt":   strings.Repeat(strings.Repeat("x", 999)+"\n", 300),
		"dir/":      "",
	}
	tests := []struct {
		name    string
		p       files.ReadParams
		want    string // whole output, or with prefix/suffix set, parts of it
		prefix  string
		suffix  string
		wantErr string
	}{
		{name: "whole", p: files.ReadParams{Path: "a.txt"}, want: "     1\tone\n     2\ttwo\n     3\tthree\n"},
		{name: "offset", p: files.ReadParams{Path: "a.txt", Offset: 2}, want: "     2\ttwo\n     3\tthree\n"},
		{name: "offset and limit", p: files.ReadParams{Path: "a.txt", Offset: 1, Limit: 2}, want: "     1\tone\n     2\ttwo\n[more lines follow; continue with offset=3]\n"},
		{name: "crlf", p: files.ReadParams{Path: "crlf.txt"}, want: "     1\tone\n     2\ttwo\n"},
		{name: "default limit", p: files.ReadParams{Path: "many.txt"}, prefix: "     1\tline 1\n", suffix: "  2000\tline 2000\n[more lines follow; continue with offset=2001]\n"},
		{name: "continue", p: files.ReadParams{Path: "many.txt", Offset: 2001}, prefix: "  2001\tline 2001\n", suffix: "  2500\tline 2500\n"},
		{name: "long line", p: files.ReadParams{Path: "long.txt"}, want: "     1\t" + long[:2000*2] + " [line cut at 2000 characters]\n     2\tshort\n"},
		// 260 numbered lines of 1007 bytes fit in 256 KiB.
		{name: "byte cap", p: files.ReadParams{Path: "big.txt"}, prefix: "     1\txxx", suffix: "[output capped at 256 KiB; continue with offset=261]\n"},
		{name: "empty", p: files.ReadParams{Path: "empty.txt"}, want: "[empty file]\n"},
		{name: "past end", p: files.ReadParams{Path: "a.txt", Offset: 4}, wantErr: "past the end of a.txt, which has 3 lines"},
		{name: "binary", p: files.ReadParams{Path: "bin.dat"}, wantErr: "binary file"},
		{name: "directory", p: files.ReadParams{Path: "dir"}, wantErr: "is a directory"},
		{name: "missing", p: files.ReadParams{Path: "nope"}, wantErr: "does not exist"},
		{name: "negative offset", p: files.ReadParams{Path: "a.txt", Offset: -1}, wantErr: "positive"},
		{name: "no path", p: files.ReadParams{}, wantErr: "path is required"},
	}
	w, _ := newWorkspace(t, tree)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Read(tt.p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Read(%+v) = %v, want error containing %q", tt.p, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read(%+v) = %v", tt.p, err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Read(%+v) = %q, want %q", tt.p, got, tt.want)
			}
			if !strings.HasPrefix(got, tt.prefix) || !strings.HasSuffix(got, tt.suffix) {
				t.Errorf("Read(%+v) = %.60q...%q, want prefix %q and suffix %q", tt.p, got, got[max(0, len(got)-80):], tt.prefix, tt.suffix)
			}
		})
	}
}

func TestReadFIFODoesNotBlock(t *testing.T) {
	w, root := newWorkspace(t, nil)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := w.Read(files.ReadParams{Path: "pipe"}); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("Read(fifo) = %v, want a named pipe error", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pipe")); err != nil {
		t.Error(err)
	}
}
