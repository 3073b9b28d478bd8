package agenttools

import (
	"testing"

	"github.com/apserver/apserver/model"
)

func TestUnwrapArguments(t *testing.T) {
	for _, tc := range []struct {
		in   model.ToolCall
		want string
	}{
		{model.ToolCall{Arguments: `{"cmd":"ls"}`}, `{"cmd":"ls"}`},
		{model.ToolCall{Arguments: `"{\"cmd\":\"ls\"}"`}, `{"cmd":"ls"}`},
		{model.ToolCall{Arguments: ` "{\"cmd\":\"ls\"}" `}, `{"cmd":"ls"}`},
		{model.ToolCall{Arguments: `"ls -l"`}, `"ls -l"`},                       // a string, not an object: the tool reports it
		{model.ToolCall{Arguments: `"{not json"`}, `"{not json"`},               // not an object inside either
		{model.ToolCall{Arguments: `"{\"a\":1}"`, Custom: true}, `"{\"a\":1}"`}, // free-form input is text
	} {
		if got := UnwrapArguments(tc.in).Arguments; got != tc.want {
			t.Errorf("UnwrapArguments(%+v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
