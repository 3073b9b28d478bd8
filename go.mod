module github.com/apserver/apserver

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	golang.org/x/text v0.14.0 // indirect
)
