package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestParseListen(t *testing.T) {
	good := map[string]Endpoint{
		"ws://127.0.0.1:4500": {"tcp", "127.0.0.1:4500"},
		"ws://localhost:0":    {"tcp", "127.0.0.1:0"},
		"ws://[::1]:80/":      {"tcp", "[::1]:80"},
		"unix:///run/a.sock":  {"unix", "/run/a.sock"},
		"unix://":             {"unix", "/def.sock"},
	}
	for in, want := range good {
		e, err := ParseListen(in, "/def.sock")
		if err != nil || e == nil || *e != want {
			t.Errorf("ParseListen(%q) = %v, %v; want %v", in, e, err, want)
		}
	}
	if e, err := ParseListen("stdio://", "/def.sock"); e != nil || err != nil {
		t.Errorf("stdio:// = %v, %v; want nil, nil", e, err)
	}
	for _, in := range []string{"ws://example.com:80", "ws://127.0.0.1", "ws://127.0.0.1:80/rpc", "wss://127.0.0.1:80", "tcp://x", "http://127.0.0.1:1"} {
		if _, err := ParseListen(in, "/def.sock"); err == nil {
			t.Errorf("ParseListen(%q) accepted", in)
		}
	}
	if (&Endpoint{"tcp", "0.0.0.0:1"}).Loopback() || !(&Endpoint{"tcp", "127.0.0.1:1"}).Loopback() || !(&Endpoint{"unix", "/a"}).Loopback() {
		t.Error("Loopback is wrong")
	}
}

func TestTokenHash(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(f, []byte("  s3cret\n"), 0o600)
	h, err := TokenHash(f, "")
	sum := sha256.Sum256([]byte("s3cret"))
	if err != nil || hex.EncodeToString(h) != hex.EncodeToString(sum[:]) {
		t.Fatalf("TokenHash(file) = %x, %v", h, err)
	}
	if h2, err := TokenHash("", hex.EncodeToString(sum[:])); err != nil || string(h2) != string(h) {
		t.Errorf("TokenHash(hex) = %x, %v", h2, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, c := range [][2]string{{"", ""}, {f, "ab"}, {"", "abcd"}, {empty, ""}, {"/nonexistent/tok", ""}} {
		if _, err := TokenHash(c[0], c[1]); err == nil {
			t.Errorf("TokenHash(%q, %q) accepted", c[0], c[1])
		}
	}
	r, _ := http.NewRequest("GET", "/", nil)
	for hdr, ok := range map[string]bool{"": false, "Bearer s3cret": true, "Bearer  s3cret ": true, "Bearer wrong": false, "bearer s3cret": false, "s3cret": false} {
		r.Header.Set("Authorization", hdr)
		if authorized(r, h) != ok {
			t.Errorf("Authorization %q: authorized = %v, want %v", hdr, !ok, ok)
		}
	}
}
