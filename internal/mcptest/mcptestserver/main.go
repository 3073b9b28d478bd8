// Command mcptestserver serves mcptest's server over stdio, or with -http
// over streamable HTTP on 127.0.0.1 (it prints the URL, then serves). With
// -token it wants "Authorization: Bearer TOKEN".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/apserver/apserver/internal/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	httpMode := flag.Bool("http", false, "serve streamable HTTP on 127.0.0.1")
	token := flag.String("token", "", "bearer token the HTTP server requires")
	flag.Parse()
	if p := os.Getenv(mcptest.EnvPIDFile); p != "" {
		_ = os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	fmt.Fprintln(os.Stderr, "mcptestserver: started")
	s := mcptest.NewServer()
	if !*httpMode {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if *token != "" && r.Header.Get("Authorization") != "Bearer "+*token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if v := r.Header.Get("X-Mcptest-Require"); v != "" && r.Header.Get(v) == "" {
			http.Error(w, "missing header "+v, http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	})))
}
