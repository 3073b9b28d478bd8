package scripted_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/apserver/apserver/model/scripted"
)

func ExampleLoadScript() {
	sc, err := scripted.LoadScript(strings.NewReader(`{
	  "rules": [{"match": "run the tests", "steps": [
	    {"text": "Running them.", "tool_calls": [{"command": "go test ./..."}]},
	    {"text": "All tests passed."}
	  ]}],
	  "default": [{"deltas": 3, "delta_text": "word ", "ttft_ms": 20}]
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(len(sc.Rules[0].Steps), sc.Rules[0].Steps[0].ToolCalls[0].Command, sc.Default[0].TTFT)
	// Output: 2 go test ./... 20ms
}

func ExampleStart() {
	srv, err := scripted.Start(scripted.Script{Rules: []scripted.Rule{
		{Match: "hello", Steps: []scripted.Step{{Text: "Hi! How can I help?"}}},
	}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// Any OpenAI-compatible client pointed at srv.URL() works; this one is
	// plain net/http asking for a non-streamed chat completion.
	body := `{"model":"any","messages":[{"role":"user","content":"hello there"}]}`
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	fmt.Println(out.Choices[0].Message.Content)
	fmt.Println(srv.Requests()[0].LastUserText)
	// Output:
	// Hi! How can I help?
	// hello there
}
