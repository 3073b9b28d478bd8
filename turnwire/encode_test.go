package turnwire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestEncodeIsJSONMarshal: the stored JSON of an item is json.Marshal's
// bytes whether it comes back whole (small, or with long strings) or, from
// protocol.HugeEncoding on, as an encoding the store writes out itself.
func TestEncodeIsJSONMarshal(t *testing.T) {
	for _, n := range []int{5, protocol.LargeMin + 3, protocol.HugeEncoding + 7} {
		text := strings.Repeat("é<&>\u2028\"\\x", n/12+1)
		for _, item := range []protocol.ThreadItem{
			protocol.AgentMessageItem{ID: "m", Text: text},
			protocol.UserMessageItem{ID: "u", Content: []protocol.UserInput{{Type: "text", Text: text}}},
		} {
			want, err := json.Marshal(item)
			if err != nil {
				t.Fatal(err)
			}
			raw, enc, err := Encode(item)
			if err != nil {
				t.Fatal(err)
			}
			if huge := len(want) >= protocol.HugeEncoding; huge != (enc != nil) || huge == (raw != nil) {
				t.Fatalf("%s of %d bytes: raw %d bytes, encoding %v", item.ItemType(), len(want), len(raw), enc != nil)
			}
			if enc != nil {
				var b bytes.Buffer
				if _, err := enc.WriteTo(&b); err != nil {
					t.Fatal(err)
				}
				if enc.Len() != b.Len() {
					t.Errorf("%s: encoding's Len %d, wrote %d", item.ItemType(), enc.Len(), b.Len())
				}
				raw = b.Bytes()
			}
			if !bytes.Equal(raw, want) {
				t.Errorf("%s of %d bytes: stored JSON differs from json.Marshal's (%d bytes)", item.ItemType(), len(want), len(raw))
			}
		}
	}
}
