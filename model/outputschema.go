package model

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// OutputSchema asks the model for JSON output matching a JSON schema
// (structured output): Responses text.format {type: json_schema}, Chat
// response_format {type: json_schema}. The answer arrives as the message
// text.
type OutputSchema struct {
	Name   string          // [a-zA-Z0-9_-]{1,64}
	Schema json.RawMessage // a JSON schema object
	Strict bool            // ask the server to enforce the schema exactly
}

func (o *OutputSchema) responsesText() *openai.ResponseTextConfig {
	if o == nil {
		return nil
	}
	return &openai.ResponseTextConfig{Format: &openai.ResponseTextFormat{
		Type: "json_schema", Name: o.Name, Schema: o.Schema, Strict: o.Strict,
	}}
}

func (o *OutputSchema) chatFormat() *openai.ChatCompletionResponseFormat {
	if o == nil {
		return nil
	}
	return &openai.ChatCompletionResponseFormat{
		Type:       openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: o.Name, Schema: o.Schema, Strict: o.Strict},
	}
}
