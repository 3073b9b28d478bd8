package files_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

// TestSpecs checks each tool's schema against its params struct: valid JSON,
// one property per json field, required fields exactly the ones without
// omitempty.
func TestSpecs(t *testing.T) {
	params := map[string]any{
		files.ToolReadFile:  files.ReadParams{},
		files.ToolListDir:   files.ListParams{},
		files.ToolSearch:    files.SearchParams{},
		files.ToolEditFile:  files.EditParams{},
		files.ToolWriteFile: files.WriteParams{},
	}
	specs := files.Specs()
	if len(specs) != len(params) {
		t.Fatalf("Specs() has %d tools, want %d", len(specs), len(params))
	}
	for _, s := range specs {
		p, ok := params[s.Name]
		if !ok {
			t.Errorf("unexpected tool %q", s.Name)
			continue
		}
		if strings.TrimSpace(s.Description) == "" {
			t.Errorf("%s: empty description", s.Name)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Errorf("%s: schema: %v", s.Name, err)
			continue
		}
		var fields, required []string
		rt := reflect.TypeOf(p)
		for i := range rt.NumField() {
			name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
			if opts != "omitempty" {
				required = append(required, name)
			}
		}
		var props []string
		for name := range schema.Properties {
			props = append(props, name)
		}
		slices.Sort(fields)
		slices.Sort(props)
		slices.Sort(required)
		slices.Sort(schema.Required)
		if schema.Type != "object" || !slices.Equal(props, fields) || !slices.Equal(schema.Required, required) {
			t.Errorf("%s: schema has properties %q required %q; params have %q required %q", s.Name, props, schema.Required, fields, required)
		}
	}
}

// TestParamsFromJSON decodes model arguments into the params structs.
func TestParamsFromJSON(t *testing.T) {
	var p files.SearchParams
	args := `{"pattern":"x","path":"src","glob":"*.go","max_results":5,"case_insensitive":true}`
	if err := json.Unmarshal([]byte(args), &p); err != nil {
		t.Fatal(err)
	}
	want := files.SearchParams{Pattern: "x", Path: "src", Glob: "*.go", MaxResults: 5, CaseInsensitive: true}
	if p != want {
		t.Errorf("decoded %s = %+v, want %+v", args, p, want)
	}
}
