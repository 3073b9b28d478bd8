package model

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

const benchDeltas = 10000

func responsesBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(rsEv("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_b","object":"response","status":"in_progress","output":[]}}`))
	b.WriteString(rsEv("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_b","type":"message","role":"assistant","status":"in_progress","content":[]}}`))
	for i := range n {
		fmt.Fprintf(&b, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_b\",\"output_index\":0,\"content_index\":0,\"delta\":\" token\",\"logprobs\":[],\"obfuscation\":\"abc\"}\n\n", i+2)
	}
	b.WriteString(rsEv("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_b","type":"message","role":"assistant","status":"completed","content":[]}}`))
	b.WriteString(rsEv("response.completed", `{"type":"response.completed","response":{"id":"resp_b","status":"completed","usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}`))
	return b.Bytes()
}

func chatBody(n int) []byte {
	var b bytes.Buffer
	for range n {
		b.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkStream streams benchDeltas text deltas per op from an httptest
// server; ns/delta is the whole cost (server writes included) per delta.
func BenchmarkStream(b *testing.B) {
	for _, wire := range []Wire{WireResponses, WireChat} {
		b.Run(string(wire), func(b *testing.B) {
			body := responsesBody(benchDeltas)
			if wire == WireChat {
				body = chatBody(benchDeltas)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(body)
			}))
			defer srv.Close()
			c := NewClient(Provider{BaseURL: srv.URL + "/v1", Wire: wire}, nil)
			req := Request{Model: "m", Input: []Entry{{Kind: EntryUser, Text: "hi"}}}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				n := 0
				err := c.Stream(context.Background(), req, func(ev Event) {
					if ev.Kind == EvTextDelta {
						n++
					}
				})
				if err != nil || n != benchDeltas {
					b.Fatalf("err %v, %d deltas", err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchDeltas), "ns/delta")
		})
	}
}

// BenchmarkParseDelta measures apserver's own per-delta work (decoding and
// dispatching one data line), without HTTP and go-openai's line reader.
func BenchmarkParseDelta(b *testing.B) {
	lines := map[Wire][]byte{
		WireResponses: []byte(`{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_b","output_index":0,"content_index":0,"delta":" token","logprobs":[],"obfuscation":"abc"}`),
		WireChat:      []byte(`{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`),
	}
	for _, wire := range []Wire{WireResponses, WireChat} {
		b.Run(string(wire), func(b *testing.B) {
			em := &emitter{fn: func(Event) {}}
			var p parser = newChatParser(em)
			if wire == WireResponses {
				rp := newResponsesParser(em)
				rp.items = append(rp.items, &rsItemState{id: "msg_b", kind: itemMessage})
				p = rp
			}
			line := lines[wire]
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.line(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
