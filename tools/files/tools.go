package files

import "encoding/json"

// Tool names, as the model calls them.
const (
	ToolEditFile  = "edit_file"
	ToolWriteFile = "write_file"
	ToolReadFile  = "read_file"
	ToolListDir   = "list_dir"
	ToolSearch    = "search"
)

// ToolSpec describes one tool to the model: its name, what it does, and the
// JSON schema of its arguments.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// tool is what each params type tells the model about its tool.
type tool interface {
	Description() string
	Parameters() json.RawMessage
}

// Specs returns the specs of the file tools, in a fixed order.
func Specs() []ToolSpec {
	tools := []struct {
		name string
		t    tool
	}{
		{ToolReadFile, ReadParams{}},
		{ToolListDir, ListParams{}},
		{ToolSearch, SearchParams{}},
		{ToolEditFile, EditParams{}},
		{ToolWriteFile, WriteParams{}},
	}
	specs := make([]ToolSpec, len(tools))
	for i, t := range tools {
		specs[i] = ToolSpec{Name: t.name, Description: t.t.Description(), Parameters: t.t.Parameters()}
	}
	return specs
}
