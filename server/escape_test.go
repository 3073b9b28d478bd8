package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// escapeCases are strings whose JSON escaping is easy to get wrong.
var escapeCases = []string{
	"", "plain", `q"b\`, "<>&",
	"\x00\x01\x08\x0c\x1f\x7f", "nl\n cr\r tab\t",
	"é ✓ 🙂", "\u2028", "\u2029", "a\u2028b\u2029c",
	"bad\xff", "\xfe\xff", "cut \xe2\x80", "surrogate \xed\xa0\x80", "overlong \xc0\xaf",
	"mixed \xff\u2028\x01\"",
}

// TestEscapersAgree holds apserver's escaper (appendString, which is
// protocol.AppendJSONString) and the fake model's
// (scripted.AppendJSONString) to the same bytes, those to encoding/json's
// own bytes without HTML escaping, and both to what encoding/json decodes
// from its own encoding.
func TestEscapersAgree(t *testing.T) {
	for _, s := range escapeCases {
		ours, theirs := appendString(nil, s), scripted.AppendJSONString(nil, s)
		if !bytes.Equal(ours, theirs) {
			t.Errorf("escaping %q: server %s, scripted %s", s, ours, theirs)
		}
		for _, b := range [][]byte{ours, theirs} {
			if bytes.ContainsRune(b, '\u2028') || bytes.ContainsRune(b, '\u2029') {
				t.Errorf("escaping %q = %s: U+2028/U+2029 left raw", s, b)
			}
		}
		if std, _ := json.Marshal(s); !bytes.Equal(ours, bytes.ReplaceAll(bytes.ReplaceAll(bytes.ReplaceAll(std,
			[]byte(`\u003c`), []byte("<")), []byte(`\u003e`), []byte(">")), []byte(`\u0026`), []byte("&"))) {
			t.Errorf("escaping %q: server %s, encoding/json (no HTML escaping) %s", s, ours, std)
		}
		var back, want string
		if err := json.Unmarshal(ours, &back); err != nil {
			t.Errorf("escaping %q = %s: %v", s, ours, err)
			continue
		}
		std, _ := json.Marshal(s)
		_ = json.Unmarshal(std, &want)
		if back != want {
			t.Errorf("escaping %q decodes to %q, encoding/json's to %q", s, back, want)
		}
	}
}
