package config

// Sources name what config/read reports as layers, lowest precedence
// first: the user file, the workspace file, and the settings given on the
// command line (apserver's keys). The front end that loaded the config
// fills it in; session reads the user file of it (config/batchWrite, MCP
// edits) and the config/read service reports all of it.
type Sources struct {
	UserFile      string
	WorkspaceFile string
	Flags         map[string]any
}
