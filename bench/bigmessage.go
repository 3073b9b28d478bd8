//go:build ignore

// bigmessage measures apserver's peak RSS on one user message of many
// megabytes (docs/benchmarks.md, "A message larger than the window"). It
// is kept out of the module's packages by the build tag and run with
//
//	go build -o bin/apserver ./cmd/apserver
//	go run ./bench/bigmessage.go -bin bin/apserver -mib 10
//
// It starts a model endpoint of its own on 127.0.0.1 that counts the
// requests it gets (and refuses each as too long), starts apserver on a
// fresh data directory with model_context_window set, sends initialize,
// thread/start and one turn/start whose text is -mib MiB, waits for
// turn/completed, and prints one JSON line: the message's size, the turn's
// status and error, the model requests, and the server's VmHWM.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
)

func main() {
	bin := flag.String("bin", "bin/apserver", "the apserver binary")
	mib := flag.Int("mib", 10, "size of the user message in MiB")
	window := flag.Int64("window", 272000, "model_context_window in tokens")
	flag.Parse()
	if err := run(*bin, *mib, *window); err != nil {
		fmt.Fprintln(os.Stderr, "bigmessage:", err)
		os.Exit(1)
	}
}

func run(bin string, mib int, window int64) error {
	var requests atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			requests.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"too long (context_length_exceeded)","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	}))

	dir, err := os.MkdirTemp("", "bigmessage")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("model_context_window = %d\n", window)), 0o600); err != nil {
		return err
	}
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--config", cfg, "--model", "m",
		"--base-url", "http://"+ln.Addr().String()+"/v1", "--wire", "responses")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=dummy", "HOME="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { in.Close(); cmd.Wait() }()
	r := bufio.NewReaderSize(out, 1<<20)
	send := func(id int, method string, params any) error {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		_, err := in.Write(append(b, '\n'))
		return err
	}
	// await reads lines until one matches; it returns that line.
	await := func(match func(line []byte) bool) ([]byte, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			if match(line) {
				return line, nil
			}
		}
	}
	reply := func(id int) func([]byte) bool {
		want := []byte(fmt.Sprintf(`"id":%d,`, id))
		return func(l []byte) bool { return bytes.Contains(l, want) && !bytes.Contains(l, []byte(`"method"`)) }
	}
	if err := send(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "bench", "version": "0"}}); err != nil {
		return err
	}
	if _, err := await(reply(1)); err != nil {
		return err
	}
	in.Write([]byte(`{"jsonrpc":"2.0","method":"initialized"}` + "\n"))
	send(2, "thread/start", map[string]any{"cwd": ws, "approvalPolicy": "never"})
	line, err := await(reply(2))
	if err != nil {
		return err
	}
	var ts struct {
		Result struct {
			Thread struct{ ID string } `json:"thread"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &ts); err != nil || ts.Result.Thread.ID == "" {
		return fmt.Errorf("thread/start: %.300s", line)
	}
	rssBefore := vmHWM(cmd.Process.Pid)
	size := mib << 20
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", size/44+1)[:size]
	if err := send(3, "turn/start", map[string]any{"threadId": ts.Result.Thread.ID, "input": []map[string]any{{"type": "text", "text": text}}}); err != nil {
		return err
	}
	text = ""
	line, err = await(func(l []byte) bool {
		return bytes.HasPrefix(l, []byte(`{"jsonrpc":"2.0","method":"turn/completed"`)) || bytes.Contains(l[:min(len(l), 80)], []byte(`"turn/completed"`))
	})
	if err != nil {
		return err
	}
	var done struct {
		Params struct {
			Turn struct {
				Status string
				Error  *struct{ Message, CodexErrorInfo any }
			}
		}
	}
	json.Unmarshal(line, &done)
	rss := vmHWM(cmd.Process.Pid)
	errMsg := ""
	if e := done.Params.Turn.Error; e != nil {
		errMsg = fmt.Sprint(e.Message)
	}
	b, _ := json.Marshal(map[string]any{
		"label": "bigmessage", "message_bytes": size, "turn_status": done.Params.Turn.Status, "error": errMsg,
		"model_requests": requests.Load(), "peak_rss_kb_before": rssBefore, "peak_rss_kb": rss,
		"rss_per_message_byte": float64(rss*1024) / float64(size),
	})
	fmt.Println(string(b))
	return nil
}

func vmHWM(pid int) int64 {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var kb int64
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "VmHWM:"), "kB")), &kb)
		}
	}
	return kb
}
