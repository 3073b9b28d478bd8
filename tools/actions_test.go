package tools

import (
	"reflect"
	"testing"
)

func TestParseCommandActions(t *testing.T) {
	read := func(cmd, name, path string) CommandAction {
		return CommandAction{Type: ActionRead, Command: cmd, Name: name, Path: path}
	}
	list := func(cmd, path string) CommandAction {
		return CommandAction{Type: ActionListFiles, Command: cmd, Path: path}
	}
	search := func(cmd, query, path string) CommandAction {
		return CommandAction{Type: ActionSearch, Command: cmd, Query: query, Path: path}
	}
	unknown := func(cmd string) CommandAction {
		return CommandAction{Type: ActionUnknown, Command: cmd}
	}
	tests := []struct {
		in   string
		want []CommandAction
	}{
		{"cat a.go", []CommandAction{read("cat a.go", "a.go", "a.go")}},
		{"cat src/x/a.go", []CommandAction{read("cat src/x/a.go", "a.go", "src/x/a.go")}},
		{"cat a.go b.go", []CommandAction{read("cat a.go b.go", "a.go", "a.go"), read("cat a.go b.go", "b.go", "b.go")}},
		{"head -n 50 README.md", []CommandAction{read("head -n 50 README.md", "README.md", "README.md")}},
		{"sed -n '10,40p' main.go", []CommandAction{read("sed -n 10,40p main.go", "main.go", "main.go")}},
		{"nl -ba main.go | sed -n 1,20p", []CommandAction{read("nl -ba main.go", "main.go", "main.go")}},
		{"ls src", []CommandAction{list("ls src", "src")}},
		{"ls -la", []CommandAction{list("ls -la", "")}},
		{"cd src && ls", []CommandAction{list("ls", "src")}},
		{"cd /repo && cat go.mod", []CommandAction{read("cat go.mod", "go.mod", "/repo/go.mod")}},
		{"rg foo src", []CommandAction{search("rg foo src", "foo", "src")}},
		{"rg -n 'func main' --type go", []CommandAction{search("rg -n 'func main' --type go", "func main", "")}},
		{"rg --files src", []CommandAction{list("rg --files src", "src")}},
		{"grep -rn -e TODO internal | head -n 20", []CommandAction{search("grep -rn -e TODO internal", "TODO", "internal")}},
		{"git grep Exec tools", []CommandAction{search("git grep Exec tools", "Exec", "tools")}},
		{"find . -name '*.go'", []CommandAction{search("find . -name '*.go'", "*.go", ".")}},
		{"find src -type f", []CommandAction{list("find src -type f", "src")}},
		{"echo start; cat a.go", []CommandAction{read("cat a.go", "a.go", "a.go")}},
		{"go test ./...", []CommandAction{unknown("go test ./...")}},
		{"go build && cat log", []CommandAction{unknown("go build"), read("cat log", "log", "log")}},
		{"echo hi > f", []CommandAction{unknown("echo hi > f")}},
		{"cat $(ls)", []CommandAction{unknown("cat $(ls)")}},
		{"cd src", []CommandAction{unknown("cd src")}},
		{"cat", []CommandAction{unknown("cat")}},
		// The form apserver runs commands in, and wrappers, are looked through.
		{"/bin/bash -c 'cat a.go'", []CommandAction{read("cat a.go", "a.go", "a.go")}},
		{"/bin/bash -c 'cd src && rg -n foo | head'", []CommandAction{search("rg -n foo", "foo", "src")}},
		{"timeout 5 cat a.go", []CommandAction{read("cat a.go", "a.go", "a.go")}},
		{"cat a.go 2>/dev/null", []CommandAction{read("cat a.go", "a.go", "a.go")}},
		{"cat a.go 2>&1 | nl", []CommandAction{read("cat a.go", "a.go", "a.go")}},
		{"ls | xargs cat", []CommandAction{list("ls", ""), unknown("cat")}},
		{"bash -c \"$x\"", []CommandAction{unknown("bash -c \"$x\"")}},
		{"cat a.go > b.go", []CommandAction{unknown("cat a.go > b.go")}},
		{"echo 'unterminated", []CommandAction{unknown("echo 'unterminated")}},
	}
	for _, tt := range tests {
		if got := ParseCommandActions(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCommandActions(%q) =\n  %+v\nwant\n  %+v", tt.in, got, tt.want)
		}
	}
}
