package manager

import (
	"encoding/json"
	"slices"

	"github.com/apserver/apserver/protocol"
)

// The user's confirmation of a change the manager proposes from chat:
// the question asked in the thread (item/tool/requestUserInput) and its
// answer read back.

// Confirmation answers: the option labels of the question.
const (
	ConfirmApply  = "Apply"
	ConfirmCancel = "Cancel"
)

// ConfirmQuestions are the questions that ask the user to confirm the
// change question describes.
func ConfirmQuestions(question string) []protocol.UserInputQuestion {
	return []protocol.UserInputQuestion{{ID: "confirm", Header: "Manager", Question: question, Options: []protocol.UserInputOption{
		{Label: ConfirmApply, Description: "Make the change"}, {Label: ConfirmCancel, Description: "Leave the plan as it is"}}}}
}

// Confirmed reports whether a requestUserInput answer to ConfirmQuestions
// chose Apply.
func Confirmed(raw json.RawMessage) bool {
	var a struct {
		Answers map[string]struct {
			Answers []string `json:"answers"`
		} `json:"answers"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return false
	}
	return slices.Contains(a.Answers["confirm"].Answers, ConfirmApply)
}
