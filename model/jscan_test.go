package model

import (
	"encoding/json"
	"reflect"
	"testing"
)

var rsFastCorpus = []string{
	`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[],"obfuscation":"x"}`,
	` { "type" : "response.output_text.delta" , "item_id" : "m" , "delta" : "a\"b\\c\/d\n\t\r\b\f" } `,
	`{"type":"response.output_text.delta","item_id":"m","delta":"\u00e9\u2603 \ud83d\ude00 lone:\ud800 end"}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"wörld ☃ 😀"}`,
	`{"type":"response.reasoning_summary_text.delta","item_id":"rs","output_index":3,"summary_index":2,"delta":"x","extra":{"a":[1,{"b":"]}"}],"c":null},"n":-1.5e3,"t":true}`,
	`{"type":"response.reasoning_text.delta","item_id":"rs","content_index":1,"delta":""}`,
	`{"type":"response.function_call_arguments.delta","item_id":"fc","delta":"{\"a\":"}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":null}`,
	// Refused by the fast path (fall back to encoding/json):
	`{"type":"response.output_text.delta","item_id":"m","delta":"bad \x01 control"}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"x",}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":{"nested":1}}`,
	`{"type":"response.output_text.delta","item_id":"m","content_index":1.0,"delta":"x"}`,
	`{"type":"response.output_item.added","item":{"id":"m","type":"message"}}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"x"} trailing`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"\x"}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"\ud83d\u"}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"` + "\xff" + `"}`,
	`{"type":"response.output_text.delta","item_id":"m","delta":"unterminated`,
	`{"type":"resp\u006fnse.output_text.delta","item_id":"m","delta":"x"}`,
	`[]`, ``, `{`, `{"type"`, `{"type":}`, `{"a":tru`, `{"a":[1,2}`, `{"a":"b",`, `{"a":01}`, `{"Delta":"x"}`,
}

// When the fast path accepts a line, it must decode exactly what
// encoding/json decodes.
func checkRSFast(t *testing.T, line string) {
	p := newResponsesParser(&emitter{fn: func(Event) {}})
	if !p.decodeFast([]byte(line)) {
		return
	}
	fast := p.ev
	var slow rsEvent
	if err := json.Unmarshal([]byte(line), &slow); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json: %v", line, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("line %q:\nfast %+v\nslow %+v", line, fast, slow)
	}
}

var chatFastCorpus = []string{
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi \"q\" \u2603"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"r","reasoning":null},"finish_reason":"stop"}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"reasoning":"think"},"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x","tool_calls":null}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"x","tool_calls":[]}}]}`,
	`{"id":"c","choices":[]}`,
	`{"id":"c","choices":null,"usage":{"prompt_tokens":1}}`,
	`{"id":"c","choices":[{"index":0,"delta":{}},{"index":1,"delta":{"content":"y"}}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"reasoning":{"text":"obj"}}}]}`,
	`{"error":{"message":"boom"}}`,
	`{"id":"c","choices":[{"index":0,"delta":null,"finish_reason":"length"}]}`,
}

func checkChatFast(t *testing.T, line string) {
	p := newChatParser(&emitter{fn: func(Event) {}})
	if !p.decodeFast([]byte(line)) {
		return
	}
	fast := p.chunk
	var slow ccChunk
	if err := json.Unmarshal([]byte(line), &slow); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json: %v", line, err)
	}
	// nil and empty slices mean the same to the parser.
	for _, c := range []*ccChunk{&fast, &slow} {
		if len(c.Choices) == 0 {
			c.Choices = nil
		}
		for i := range c.Choices {
			if len(c.Choices[i].Delta.ToolCalls) == 0 {
				c.Choices[i].Delta.ToolCalls = nil
			}
		}
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("line %q:\nfast %+v\nslow %+v", line, fast, slow)
	}
}

func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	for _, l := range rsFastCorpus {
		checkRSFast(t, l)
	}
	for _, l := range chatFastCorpus {
		checkChatFast(t, l)
	}
	// The common shapes must actually take the fast path.
	p := newResponsesParser(&emitter{fn: func(Event) {}})
	for _, l := range rsFastCorpus[:8] {
		if !p.decodeFast([]byte(l)) {
			t.Errorf("fast path refused %q", l)
		}
	}
	c := newChatParser(&emitter{fn: func(Event) {}})
	for _, l := range chatFastCorpus[:6] {
		c.chunk = ccChunk{}
		if !c.decodeFast([]byte(l)) {
			t.Errorf("fast path refused %q", l)
		}
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, l := range rsFastCorpus {
		f.Add(l)
	}
	for _, l := range chatFastCorpus {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkRSFast(t, line)
		checkChatFast(t, line)
	})
}
