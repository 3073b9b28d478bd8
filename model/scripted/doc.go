// Package scripted is a scripted, OpenAI-compatible model server.
//
// It is a real HTTP server bound to 127.0.0.1 that speaks both wires the
// model package talks to:
//
//   - POST …/responses: the Responses API, streamed as Server-Sent Events
//     ("event: <type>\ndata: <json>\n\n", every event with type and an
//     increasing sequence_number), or one JSON object when the request does
//     not ask for a stream;
//   - POST …/chat/completions: Chat Completions, streamed as
//     "data: <chat.completion.chunk>" lines ending with "data: [DONE]", or one
//     chat.completion object when "stream" is false;
//   - GET …/models: a one-model list.
//
// Routes match on the path suffix, so any prefix works; URL returns the
// conventional ".../v1" base. The offline `apserver demo` runs against
// DemoScript, and the session and end-to-end tests run against their own
// scripts.
//
// # Which answer
//
// The server keeps no conversation state, just like a real model: each
// request is answered from its own body. The text of the last user message
// picks the Rule (the first whose Match occurs in it, ignoring case; else
// Script.Default). The number of tool-output rounds after that user message
// picks the Step within the rule: a round is a run of consecutive tool
// outputs (Responses function_call_output/custom_tool_call_output items,
// Chat role "tool" messages), which is what one model response with one or
// more parallel tool calls produces. So a turn starts at step 0, each round
// of tool results advances one step, a retried request gets the same step,
// and a request past the end of the steps gets a one-delta "done." message
// so that every turn ends.
//
// The only server-side state is the FailTimes counter of each step and the
// log of requests (Requests).
//
// # Script files
//
// LoadScript reads the JSON form of a Script:
//
//	{
//	  "rules": [
//	    {"match": "run the tests", "steps": [
//	      {"text": "Running them.", "reasoning": ["Plan: run the suite."],
//	       "tool_calls": [{"command": "ls && echo '2 passed'"}]},
//	      {"text": "All 2 tests passed.", "usage": {"input": 1200, "cached": 1000, "output": 6}}
//	    ]},
//	    {"match": "flaky", "steps": [{"http_error": 503, "fail_times": 2, "text": "recovered"}]}
//	  ],
//	  "default": [{"deltas": 10000, "delta_text": "word ", "inter_delta_us": 0}]
//	}
//
// Step keys: text, deltas, delta_text, reasoning, tool_calls (name,
// arguments, command, call_id), http_error, error_message, fail_times,
// ttft_ms, inter_delta_us, stall_after, hang, endless, cut_after,
// fail_after, usage (input, cached, output,
// reasoning). A rule may set "sequential": true (Rule.Sequential).
// Unknown keys are an error.
package scripted
