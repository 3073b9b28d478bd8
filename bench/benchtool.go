//go:build ignore

// benchtool is the helper of bench/peerbench.sh. It is kept out of the module's
// packages by the build tag and built on demand with
//
//	go build -o DIR/benchtool ./bench/benchtool.go
//
// Subcommands:
//
//	sseread  time a plain HTTP client reading the mock's whole Responses
//	         stream (the baseline the stream turn is compared with); prints
//	         one JSON line in the shape of drive's metrics
//	longthread  time thread/resume and thread/read of a 100,000-item
//	         thread with compactions, and the server's peak RSS
//	startpair  start two binaries in turn (A B A B …), each answering one
//	         initialize and ending at the end of its input, and print each
//	         one's median wall and CPU time and the medians of the ratios
//	         B/A pair by pair
//	relabel  copy JSON lines from stdin to stdout with "label" replaced
//	report   read summarize's medians, print the comparison table, write
//	         report.json; exit status 1 when a run failed
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apserver/apserver/store"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool sseread|longthread|startpair|relabel|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "sseread":
		err = sseread(os.Args[2:])
	case "relabel":
		err = relabel(os.Args[2:])
	case "startpair":
		err = startpair(os.Args[2:])
	case "longthread":
		err = longthread(os.Args[2:])
	case "report":
		var failed bool
		failed, err = report(os.Args[2:])
		if err == nil && failed {
			os.Exit(1)
		}
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(2)
	}
}

// ---------------------------------------------------------------- sseread

func sseread(args []string) error {
	fs := flag.NewFlagSet("sseread", flag.ExitOnError)
	url := fs.String("url", "", "Responses endpoint, e.g. http://127.0.0.1:PORT/v1/responses")
	label := fs.String("label", "baseline:stream", "label of the output line")
	model := fs.String("model", "gpt-5.5", "model sent in the request")
	prompt := fs.String("prompt", "Write a long answer.", "user text sent in the request")
	want := fs.Int("deltas", 0, "expected number of response.output_text.delta events (0: do not check)")
	_ = fs.Parse(args)
	if *url == "" {
		return fmt.Errorf("sseread: -url is required")
	}
	body, err := json.Marshal(map[string]any{
		"model":  *model,
		"stream": true,
		"input": []any{map[string]any{
			"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": *prompt}},
		}},
	})
	if err != nil {
		return err
	}
	// A fresh transport: a new connection, like a server's first request.
	client := &http.Client{Transport: &http.Transport{}}
	out := map[string]any{"label": *label}

	start := time.Now()
	deltas, n, completed, err := readStream(client, *url, body)
	elapsed := time.Since(start)

	out["read_ms"] = float64(elapsed.Microseconds()) / 1000
	out["deltas"] = deltas
	out["stream_bytes"] = n
	switch {
	case err != nil:
		out["ok"], out["error"] = false, err.Error()
	case !completed:
		out["ok"], out["error"] = false, "no response.completed event"
	case *want > 0 && deltas != *want:
		out["ok"], out["error"] = false, fmt.Sprintf("%d deltas, want %d", deltas, *want)
	default:
		out["ok"] = true
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func readStream(client *http.Client, url string, body []byte) (deltas int, n int64, completed bool, err error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer dummy")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, false, fmt.Errorf("HTTP %s", resp.Status)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		n += int64(len(line))
		if bytes.HasPrefix(line, []byte("event: ")) {
			ev := bytes.TrimSpace(line[len("event: "):])
			switch string(ev) {
			case "response.output_text.delta":
				deltas++
			case "response.completed":
				completed = true
			}
		}
		if err == io.EOF {
			return deltas, n, completed, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return deltas, n, completed, err
		}
	}
}

// ---------------------------------------------------------------- relabel

func relabel(args []string) error {
	fs := flag.NewFlagSet("relabel", flag.ExitOnError)
	prefix := fs.String("prefix", "", "prepended to the existing label")
	_ = fs.Parse(args)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("relabel: %v", err)
		}
		l, _ := m["label"].(string)
		m["label"] = *prefix + l
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ---------------------------------------------------------------- report

// group is one element of summarize's output.
type group struct {
	Label  string   `json:"label"`
	Runs   int      `json:"runs"`
	OK     int      `json:"ok"`
	Errors []string `json:"errors"`
	Fields map[string]struct {
		Median float64 `json:"median"`
		Min    float64 `json:"min"`
		Max    float64 `json:"max"`
	} `json:"fields"`
}

// published holds Codex 0.169.0's medians from peerbench's README (2 vCPU VM,
// 3 runs each), used when Codex is not measured in the run.
var published = map[string]map[string]float64{
	"stream": {
		"startup_to_initialize_ms": 125, "turn_ms_first": 542, "peak_rss_kb": 149916,
		"turn_cpu_s_total": 0.76, "cpu_s": 0.93, "notifications_in_turns": 10010,
		"stdout_bytes": 2406948, "shutdown_ms": 25,
	},
	"tool": {
		"startup_to_initialize_ms": 144, "turn_ms_first": 175, "peak_rss_kb": 149328,
		"turn_cpu_s_total": 0.15, "cpu_s": 0.35, "notifications_in_turns": 19,
		"stdout_bytes": 10235, "shutdown_ms": 20,
	},
	"multi-turn": {
		"startup_to_initialize_ms": 141, "turn_ms_first": 80, "turn_ms_median": 55,
		"peak_rss_kb": 147248, "turn_cpu_s_total": 0.30, "cpu_s": 0.48,
		"notifications_in_turns": 150, "stdout_bytes": 46278, "shutdown_ms": 23,
	},
}

type row struct {
	Metric   string     `json:"metric"`
	Unit     string     `json:"unit"`
	Apserver float64    `json:"apserver"`
	Other    float64    `json:"other"`
	OtherIs  string     `json:"other_is"`
	Ratio    float64    `json:"ratio"`
	Target   string     `json:"target,omitempty"`
	Limit    float64    `json:"limit,omitempty"`
	Pass     *bool      `json:"pass,omitempty"`
	Range    [2]float64 `json:"apserver_min_max"`
}

func report(args []string) (failed bool, err error) {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	summary := fs.String("summary", "", "summarize output (JSON)")
	outFile := fs.String("out", "", "write the rows and the context as JSON here")
	codex := fs.String("codex", "measured", "measured or published")
	codexVersion := fs.String("codex-version", "", "Codex version string")
	deltas := fs.Float64("deltas", 10000, "text deltas in the stream scenario")
	var meta kv
	fs.Var(&meta, "meta", "KEY=VALUE copied into the JSON (repeatable)")
	_ = fs.Parse(args)

	raw, err := os.ReadFile(*summary)
	if err != nil {
		return false, err
	}
	var groups []group
	if err := json.Unmarshal(raw, &groups); err != nil {
		return false, fmt.Errorf("%s: %v", *summary, err)
	}
	byLabel := map[string]group{}
	for _, g := range groups {
		byLabel[g.Label] = g
		if g.OK < g.Runs {
			failed = true
		}
	}
	get := func(label, field string) (float64, bool) {
		g, ok := byLabel[label]
		if !ok {
			return 0, false
		}
		f, ok := g.Fields[field]
		return f.Median, ok
	}
	rng := func(label, field string) [2]float64 {
		f := byLabel[label].Fields[field]
		return [2]float64{f.Min, f.Max}
	}
	codexGet := func(scenario, field string) (float64, bool) {
		if *codex == "measured" {
			return get("codex:"+scenario, field)
		}
		v, ok := published[scenario][field]
		return v, ok
	}
	codexName := "Codex"
	if *codex != "measured" {
		codexName = "Codex (published)"
	}

	var rows []row
	add := func(metric, unit, apLabel, field string, scale float64, other float64, otherOK bool, otherIs, target string, limit float64) {
		a, ok := get(apLabel, field)
		if !ok || !otherOK {
			return
		}
		r := row{Metric: metric, Unit: unit, Apserver: a * scale, Other: other * scale, OtherIs: otherIs,
			Target: target, Limit: limit, Range: rng(apLabel, field)}
		r.Range[0] *= scale
		r.Range[1] *= scale
		r.Ratio = math.Inf(1)
		if r.Other > 0 {
			r.Ratio = r.Apserver / r.Other
		} else if r.Apserver == 0 {
			r.Ratio = 0
		}
		if target != "" {
			p := r.Ratio <= limit
			r.Pass = &p
		}
		rows = append(rows, r)
	}
	vsCodex := func(metric, unit, scenario, apLabel, field string, scale float64, target string, limit float64) {
		c, ok := codexGet(scenario, field)
		add(metric, unit, apLabel, field, scale, c, ok, codexName, target, limit)
	}
	perDelta := 1e6 / *deltas // seconds → µs per delta

	// Targets.
	for _, sc := range []string{"stream", "tool", "multi-turn"} {
		vsCodex("startup → initialize response, "+sc, "ms", sc, "apserver:"+sc, "startup_to_initialize_ms", 1, "≤ 1/10", 0.1)
	}
	vsCodex("stream turn, coalescing (default)", "ms", "stream", "apserver:stream", "turn_ms_first", 1, "≤ 1/8", 0.125)
	vsCodex("stream turn, --no-coalesce", "ms", "stream", "apserver-nocoalesce:stream", "turn_ms_first", 1, "≤ 1/8", 0.125)
	if b, ok := get("baseline:stream", "read_ms"); ok {
		add("stream turn ÷ plain read of the mock, coalescing", "ms", "apserver:stream", "turn_ms_first", 1, b, true, "plain reader", "≤ 2×", 2)
		add("stream turn ÷ plain read of the mock, --no-coalesce", "ms", "apserver-nocoalesce:stream", "turn_ms_first", 1, b, true, "plain reader", "≤ 2×", 2)
	}
	for _, sc := range []string{"stream", "tool", "multi-turn"} {
		vsCodex("peak RSS, "+sc, "kB", sc, "apserver:"+sc, "peak_rss_kb", 1, "≤ 1/8", 0.125)
	}
	vsCodex("peak RSS, stream, --no-coalesce", "kB", "stream", "apserver-nocoalesce:stream", "peak_rss_kb", 1, "≤ 1/8", 0.125)
	vsCodex("CPU/delta, stream turn, coalescing", "µs", "stream", "apserver:stream", "turn_cpu_s_total", perDelta, "≤ 1/8", 0.125)
	vsCodex("CPU/delta, stream turn, --no-coalesce", "µs", "stream", "apserver-nocoalesce:stream", "turn_cpu_s_total", perDelta, "≤ 1/8", 0.125)
	vsCodex("CPU/delta, whole session (rusage), coalescing", "µs", "stream", "apserver:stream", "cpu_s", perDelta, "≤ 1/8", 0.125)
	vsCodex("CPU/delta, whole session (rusage), --no-coalesce", "µs", "stream", "apserver-nocoalesce:stream", "cpu_s", perDelta, "≤ 1/8", 0.125)

	// Context, no target.
	vsCodex("tool turn (2 model calls + echo hello)", "ms", "tool", "apserver:tool", "turn_ms_first", 1, "", 0)
	vsCodex("multi-turn, first turn", "ms", "multi-turn", "apserver:multi-turn", "turn_ms_first", 1, "", 0)
	vsCodex("multi-turn, median turn", "ms", "multi-turn", "apserver:multi-turn", "turn_ms_median", 1, "", 0)
	vsCodex("stream: notifications in the turn, coalescing", "", "stream", "apserver:stream", "notifications_in_turns", 1, "", 0)
	vsCodex("stream: notifications in the turn, --no-coalesce", "", "stream", "apserver-nocoalesce:stream", "notifications_in_turns", 1, "", 0)
	vsCodex("stream: stdout bytes, --no-coalesce", "B", "stream", "apserver-nocoalesce:stream", "stdout_bytes", 1, "", 0)
	vsCodex("shutdown (stdin closed → exit, stream)", "ms", "stream", "apserver:stream", "shutdown_ms", 1, "", 0)

	// Table.
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "\n%-58s %10s %18s %7s %7s  %s\n", "metric (medians)", "apserver", codexName, "ratio", "target", "result")
	fmt.Fprintln(w, strings.Repeat("-", 112))
	misses := 0
	for i, r := range rows {
		if i > 0 && r.Target == "" && rows[i-1].Target != "" {
			fmt.Fprintln(w, strings.Repeat("-", 112))
		}
		other := num(r.Other, r.Unit)
		if r.OtherIs != codexName {
			other = "read " + other
		}
		res := ""
		if r.Pass != nil {
			res = "PASS"
			if !*r.Pass {
				res = "MISS"
				misses++
			}
		}
		fmt.Fprintf(w, "%-58s %10s %18s %7s %7s  %s\n", r.Metric+unitSuffix(r.Unit),
			num(r.Apserver, r.Unit), other, ratio(r.Ratio), r.Target, res)
	}
	fmt.Fprintln(w)
	if *codex != "measured" {
		fmt.Fprintf(w, "Codex column: published figures from peerbench's README (Codex 0.169.0, 2 vCPU VM), NOT measured in this run.\n")
	} else if *codexVersion != "" {
		fmt.Fprintf(w, "Codex column: %s, measured in this run on the same mock.\n", *codexVersion)
	}
	fmt.Fprintf(w, "CPU/delta = CPU seconds / %.0f text deltas; turn CPU comes in 10 ms ticks.\n", *deltas)
	targets := 0
	for _, r := range rows {
		if r.Pass != nil {
			targets++
		}
	}
	fmt.Fprintf(w, "%d of %d targets met.\n", targets-misses, targets)
	if failed {
		fmt.Fprintln(w, "Some runs FAILED (below): their figures are in the medians above, do not trust them.")
	}
	for _, g := range groups {
		if g.OK < g.Runs {
			fmt.Fprintf(w, "FAILED: %s: %d of %d runs ok\n", g.Label, g.OK, g.Runs)
			for _, e := range g.Errors {
				fmt.Fprintf(w, "   %s\n", e)
			}
		}
	}

	if *outFile != "" {
		doc := map[string]any{"codex": *codex, "codex_version": *codexVersion, "deltas": *deltas,
			"rows": rows, "groups": groups}
		for k, v := range meta {
			doc[k] = v
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return failed, err
		}
		if err := os.WriteFile(*outFile, append(b, '\n'), 0o644); err != nil {
			return failed, err
		}
	}
	return failed, nil
}

type kv map[string]string

func (m *kv) String() string { return "" }
func (m *kv) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	if *m == nil {
		*m = kv{}
	}
	(*m)[k] = v
	return nil
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

func num(v float64, unit string) string {
	switch {
	case unit == "kB" || unit == "B" || unit == "":
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratio(r float64) string {
	switch {
	case math.IsInf(r, 0):
		return "inf"
	case r >= 1:
		return fmt.Sprintf("%.2f", r)
	default:
		return fmt.Sprintf("%.3f", r)
	}
}

// ------------------------------------------------------------- longthread

// longthread builds a thread of -items stored items (with a compaction
// every -compact-every items) in a fresh data directory, then times, on a
// fresh apserver each, thread/resume (turns included and excluded) and
// thread/read, and reads the server's peak RSS (VmHWM) after each. Prints
// one JSON line per measurement.
func longthread(args []string) error {
	fs := flag.NewFlagSet("longthread", flag.ExitOnError)
	bin := fs.String("bin", "bin/apserver", "the apserver binary")
	items := fs.Int("items", 100000, "items to store")
	perTurn := fs.Int("per-turn", 10, "items per turn")
	every := fs.Int("compact-every", 1000, "a compaction every this many items")
	dir := fs.String("dir", "", "data directory (default: a fresh temporary one); a thread built there earlier is reused")
	fs.Parse(args)
	if *dir == "" {
		d, err := os.MkdirTemp("", "longthread")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	threadID := "long-thread"
	if _, err := os.Stat(filepath.Join(*dir, store.FileName)); err == nil {
		fmt.Fprintf(os.Stderr, "reusing the thread in %s\n", *dir)
	} else {
		start := time.Now()
		if threadID, err = buildLongThread(*dir, *items, *perTurn, *every); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "built %d items in %s\n", *items, time.Since(start).Round(time.Millisecond))
	}
	for _, m := range []struct {
		label, method string
		params        map[string]any
	}{
		{"resume", "thread/resume", map[string]any{"threadId": threadID}},
		{"resume-excludeTurns", "thread/resume", map[string]any{"threadId": threadID, "excludeTurns": true}},
		{"read-includeTurns", "thread/read", map[string]any{"threadId": threadID, "includeTurns": true}},
	} {
		ms, cpu, rss, n, err := timeRequest(*bin, *dir, m.method, m.params)
		if err != nil {
			return fmt.Errorf("%s: %w", m.label, err)
		}
		b, _ := json.Marshal(map[string]any{"label": "longthread:" + m.label, "items": *items, "ms": ms, "cpu_ms": cpu, "peak_rss_kb": rss, "response_bytes": n})
		fmt.Println(string(b))
	}
	return nil
}

func buildLongThread(dir string, items, perTurn, every int) (string, error) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(dir, store.FileName), store.Options{})
	if err != nil {
		return "", err
	}
	defer db.Close()
	now := time.Now().UnixMilli()
	id := "long-thread"
	cwd, _ := os.Getwd()
	if err := db.CreateThread(ctx, store.Thread{ID: id, Cwd: cwd, Model: "m", Preview: "a long thread", CreatedAt: now, UpdatedAt: now}); err != nil {
		return "", err
	}
	n := 0
	for turn := 0; n < items; turn++ {
		tid := fmt.Sprintf("turn-%06d", turn)
		if _, err := db.StartTurn(ctx, store.Turn{ThreadID: id, ID: tid, StartedAt: now}); err != nil {
			return "", err
		}
		for i := 0; i < perTurn && n < items; i++ {
			n++
			iid := fmt.Sprintf("item-%07d", n)
			text := fmt.Sprintf("message %d of a long thread: the quick brown fox jumps over the lazy dog", n)
			item, _ := json.Marshal(map[string]any{"type": "agentMessage", "id": iid, "text": text})
			hist, _ := json.Marshal([]map[string]any{{"Kind": 2, "Text": text}})
			if n%every == 0 {
				ch, _ := json.Marshal([]map[string]any{{"Kind": 1, "Text": "[Context compacted] summary up to " + iid}})
				ci, _ := json.Marshal(map[string]any{"type": "contextCompaction", "id": iid})
				if _, err := db.AppendCompaction(ctx, store.Item{ThreadID: id, TurnID: tid, ID: iid, Type: "contextCompaction", Item: ci, CompletedAt: now},
					store.Compaction{Summary: "summary", History: ch, CreatedAt: now}); err != nil {
					return "", err
				}
				continue
			}
			if _, err := db.AppendItem(ctx, store.Item{ThreadID: id, TurnID: tid, ID: iid, Type: "agentMessage", Item: item, History: hist, CompletedAt: now}); err != nil {
				return "", err
			}
		}
		if err := db.FinishTurn(ctx, store.Turn{ThreadID: id, ID: tid, Status: store.StatusCompleted, StartedAt: now, CompletedAt: now + 1000, DurationMs: 1000}); err != nil {
			return "", err
		}
	}
	return id, nil
}

// timeRequest starts apserver on dir, initializes, and times one request
// (written → its response read). It returns the time, the server's VmHWM
// in kB read right after, and the response's size.
func timeRequest(bin, dir, method string, params map[string]any) (ms, cpuMs float64, rssKB int64, size int, err error) {
	cmd := exec.Command(bin, "--data-dir", dir, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--wire", "responses")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=dummy")
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, 0, err
	}
	defer func() { in.Close(); cmd.Wait() }()
	r := bufio.NewReaderSize(out, 1<<20)
	send := func(id int, method string, params any) error {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		_, err := in.Write(append(b, '\n'))
		return err
	}
	await := func(id int) (int, error) {
		want := fmt.Sprintf(`"id":%d,`, id)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return 0, err
			}
			if bytes.Contains(line, []byte(want)) && (bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"error"`))) {
				if bytes.Contains(line[:min(len(line), 200)], []byte(`"error"`)) {
					return 0, fmt.Errorf("%.300s", line)
				}
				return len(line), nil
			}
		}
	}
	if err := send(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "bench", "version": "0"}}); err != nil {
		return 0, 0, 0, 0, err
	}
	if _, err := await(1); err != nil {
		return 0, 0, 0, 0, err
	}
	in.Write([]byte(`{"jsonrpc":"2.0","method":"initialized"}` + "\n"))
	cpu0 := procCPU(cmd.Process.Pid)
	t0 := time.Now()
	if err := send(2, method, params); err != nil {
		return 0, 0, 0, 0, err
	}
	size, err = await(2)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	ms = float64(time.Since(t0).Microseconds()) / 1000
	cpuMs = procCPU(cmd.Process.Pid) - cpu0
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "VmHWM:"), "kB")), &rssKB)
		}
	}
	return ms, cpuMs, rssKB, size, nil
}

// procCPU is the process's CPU time so far (utime+stime) in ms: on a
// loaded machine it says more than the wall time.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	var ut, st float64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return (ut + st) * 10 // 100 ticks a second
}

// startpair times start → initialize answered → end of input, for two
// binaries in turn, so that a drift of the machine's speed falls on both.
// With -fresh each start gets a new data dir (the store is created);
// otherwise each binary keeps one (an everyday start).
func startpair(args []string) error {
	fs := flag.NewFlagSet("startpair", flag.ExitOnError)
	a := fs.String("a", "", "the first binary (the baseline)")
	b := fs.String("b", "", "the second binary")
	pairs := fs.Int("pairs", 60, "pairs of starts")
	fresh := fs.Bool("fresh", false, "a new data dir for every start")
	fs.Parse(args)
	if *a == "" || *b == "" {
		return fmt.Errorf("startpair: -a and -b are required")
	}
	base, err := os.MkdirTemp("", "startpair-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	const initialize = `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"startpair","version":"1"}}}` + "\n"
	start := func(bin, dir string) (wall, cpu float64, err error) {
		if *fresh {
			if dir, err = os.MkdirTemp(base, "data-"); err != nil {
				return 0, 0, err
			}
			defer os.RemoveAll(dir)
		}
		cmd := exec.Command(bin, "--data-dir", dir)
		cmd.Stdin = strings.NewReader(initialize)
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", bin, err)
		}
		wall = time.Since(t0).Seconds() * 1000
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds() * 1000
		return wall, cpu, nil
	}
	dirs := [2]string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	bins := [2]string{*a, *b}
	var wall, cpu [2][]float64
	var wallRatio, cpuRatio []float64
	for i := -1; i < *pairs; i++ { // pair -1 warms up (and makes the kept data dirs)
		var w, c [2]float64
		for k := range bins {
			if w[k], c[k], err = start(bins[k], dirs[k]); err != nil {
				return err
			}
		}
		if i < 0 {
			continue
		}
		for k := range bins {
			wall[k], cpu[k] = append(wall[k], w[k]), append(cpu[k], c[k])
		}
		wallRatio = append(wallRatio, w[1]/w[0])
		if c[0] > 0 {
			cpuRatio = append(cpuRatio, c[1]/c[0])
		}
	}
	median := func(v []float64) float64 {
		v = append([]float64(nil), v...)
		sort.Float64s(v)
		if len(v) == 0 {
			return math.NaN()
		}
		return v[len(v)/2]
	}
	fmt.Printf("pairs %d, data dir %s\n", *pairs, map[bool]string{true: "new for every start", false: "kept"}[*fresh])
	fmt.Printf("A %s: wall %.1f ms, CPU %.1f ms (medians)\n", *a, median(wall[0]), median(cpu[0]))
	fmt.Printf("B %s: wall %.1f ms, CPU %.1f ms (medians)\n", *b, median(wall[1]), median(cpu[1]))
	fmt.Printf("B/A pair by pair: wall %.3f, CPU %.3f (medians)\n", median(wallRatio), median(cpuRatio))
	return nil
}
