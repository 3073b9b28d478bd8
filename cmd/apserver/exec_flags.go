package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
)

// codexExecFlags are the flags of `codex exec` that `apserver exec` takes
// too, so that the Codex SDK (@openai/codex-sdk), which spawns
// `codex exec --experimental-json …`, can drive apserver.
type codexExecFlags struct {
	sandbox      string
	cd           string
	outputSchema string
	images       []string
	overrides    []string // --config key=value, in order
	skipGitCheck bool     // accepted: apserver does not require a git repository
	// Accepted for the SDK and ignored (said on stderr): apserver has no
	// equivalent.
	addDirs      []string
	threadSource string
	cyberAccess  string
	features     []string // --enable / --disable: codex feature flags
	hookTrust    bool     // --dangerously-bypass-hook-trust: apserver runs no hooks

	// Codex 0.171's flags with an apserver meaning.
	yolo          bool   // --dangerously-bypass-approvals-and-sandbox
	ephemeral     bool   // a data dir of its own, removed at the end
	ignoreUser    bool   // --ignore-user-config
	strictConfig  bool   // config warnings are errors
	oss           bool   // a local provider (--local-provider)
	localProvider string // lmstudio or ollama
	color         string // always, never or auto: the live view is plain text
	version       bool   // -V, --version

	// Codex flags that cannot apply to apserver: refused with the reason.
	refused map[string]*string

	// From the overrides.
	effort   string
	approval string
	ignored  []string
}

// listFlag collects a repeated flag; commas separate values, as in codex's
// --image.
type listFlag struct {
	dst   *[]string
	comma bool
}

func (l listFlag) String() string { return "" }
func (l listFlag) Set(v string) error {
	if !l.comma {
		*l.dst = append(*l.dst, v)
		return nil
	}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.dst = append(*l.dst, p)
		}
	}
	return nil
}

// configFlag is --config (-c): a `key=value` override as codex takes it,
// or, as before, apserver's config file. An existing file is the file.
type configFlag struct {
	file      *string
	overrides *[]string
}

var configKey = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func (c configFlag) String() string { return "" }
func (c configFlag) Set(v string) error {
	if st, err := os.Stat(v); err == nil && !st.IsDir() {
		*c.file = v
		return nil
	}
	if k, _, ok := strings.Cut(v, "="); ok && configKey.MatchString(strings.TrimSpace(k)) {
		*c.overrides = append(*c.overrides, v)
		return nil
	}
	*c.file = v
	return nil
}

func (cf *codexExecFlags) register(fs *flag.FlagSet, f *serveFlags) {
	cfg := configFlag{file: &f.configFile, overrides: &cf.overrides}
	c := fs.Lookup("config")
	c.Value = cfg
	c.Usage = "apserver's config file, or a codex-style `key=value` override (repeatable; see docs/exec.md)"
	fs.Var(cfg, "c", "same as --config")
	fs.StringVar(&f.model, "m", "", "same as --model")
	fs.StringVar(&cf.sandbox, "sandbox", "", "sandbox for commands: read-only, workspace-write or danger-full-access")
	fs.StringVar(&cf.sandbox, "s", "", "same as --sandbox")
	fs.StringVar(&cf.cd, "cd", "", "work in this directory instead of the current one")
	fs.StringVar(&cf.cd, "C", "", "same as --cd")
	fs.BoolVar(&cf.skipGitCheck, "skip-git-repo-check", false, "accepted for codex compatibility (apserver never requires a git repository)")
	fs.StringVar(&cf.outputSchema, "output-schema", "", "JSON schema FILE the final message must match (structured output)")
	fs.Var(listFlag{&cf.images, true}, "image", "attach an image FILE to the prompt (repeatable, or comma-separated)")
	fs.Var(listFlag{&cf.images, true}, "i", "same as --image")
	fs.Var(listFlag{&cf.addDirs, false}, "add-dir", "accepted for codex compatibility; ignored")
	fs.StringVar(&cf.threadSource, "thread-source", "", "accepted for codex compatibility; ignored")
	fs.StringVar(&cf.cyberAccess, "cyber-access-program", "", "accepted for codex compatibility; ignored")
	fs.Var(listFlag{&cf.features, false}, "enable", "accepted for codex compatibility (a codex feature flag); ignored")
	fs.Var(listFlag{&cf.features, false}, "disable", "accepted for codex compatibility (a codex feature flag); ignored")
	fs.BoolVar(&cf.hookTrust, "dangerously-bypass-hook-trust", false, "accepted for codex compatibility; apserver runs no hooks")
	fs.BoolVar(&cf.yolo, "dangerously-bypass-approvals-and-sandbox", false, "no sandbox and no approvals (danger-full-access, approval never); forbidden rules still refuse")
	fs.BoolVar(&cf.ephemeral, "ephemeral", false, "keep nothing: a data dir of its own, removed when exec ends (the thread cannot be resumed)")
	fs.BoolVar(&cf.ignoreUser, "ignore-user-config", false, "do not read the user config file (the workspace's and the flags still apply)")
	fs.BoolVar(&cf.strictConfig, "strict-config", false, "fail when a config file has keys apserver does not know")
	fs.BoolVar(&cf.oss, "oss", false, "use a local provider on this machine: Ollama (default) or LM Studio (--local-provider)")
	fs.StringVar(&cf.localProvider, "local-provider", "", "with --oss: ollama or lmstudio")
	fs.StringVar(&cf.color, "color", "auto", "always, never or auto: accepted; apserver's live view is plain text")
	fs.BoolVar(&cf.version, "version", false, "print the version and exit")
	fs.BoolVar(&cf.version, "V", false, "same as --version")
	cf.refused = map[string]*string{}
	for name, why := range refusedExecFlags {
		v := new(string)
		cf.refused[name] = v
		fs.Var(refusedFlag{v, why.bool}, name, "not supported: "+why.why)
	}
}

// refusedExecFlags are codex exec's flags that cannot mean in apserver
// what they mean in codex; each is an error that says why (docs/exec.md).
var refusedExecFlags = map[string]struct {
	why  string
	bool bool
}{
	"remote":                {"apserver exec runs its own session; to share one, run `apserver serve --listen` and connect a client to it", false},
	"remote-auth-token-env": {"apserver exec runs its own session (see --remote)", false},
	"profile":               {"apserver has no config profiles; give a config file with --config FILE", false},
	"p":                     {"apserver has no config profiles; give a config file with --config FILE", false},
	"worktree":              {"use `apserver run`, which works on a branch and worktree of its own", true},
	"trust":                 {"a project is trusted in apserver's user config ([projects], docs/configuration.md), never from a flag", true},
	"approve-for-me":        {"use --full-auto --approvals policy: the rules and the decision model answer what a human would", true},
	"ignore-rules":          {"apserver always applies its rules: what they forbid stays forbidden in every mode", true},
}

// refusedFlag records that a refused flag was given (and its value).
type refusedFlag struct {
	v      *string
	isBool bool
}

func (r refusedFlag) String() string { return "" }
func (r refusedFlag) Set(v string) error {
	*r.v = v
	return nil
}
func (r refusedFlag) IsBoolFlag() bool { return r.isBool }

// localProviders are --oss's providers: a base URL on this machine, the
// Chat Completions wire, and the model codex's --oss uses by default.
var localProviders = map[string]string{
	"ollama":   "http://127.0.0.1:11434/v1",
	"lmstudio": "http://127.0.0.1:1234/v1",
}

// ossDefaultModel is codex's default model for --oss.
const ossDefaultModel = "gpt-oss:20b"

// apply reads the --config overrides into f and cf. Flags given by name win
// over overrides (set holds the names given). Values are TOML, or a bare
// string when they do not parse, as in codex.
func (cf *codexExecFlags) apply(f *serveFlags, set map[string]bool) error {
	for _, o := range cf.overrides {
		k, raw, _ := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		var doc map[string]any
		var v any = strings.TrimSpace(raw)
		if _, err := toml.Decode("v = "+raw, &doc); err == nil {
			v = doc["v"]
		}
		str := func() (string, error) {
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("--config %s: expected a string, got %v", k, v)
			}
			return s, nil
		}
		var dst *string
		switch k {
		case "model":
			if !set["model"] && !set["m"] {
				dst = &f.model
			}
		case "model_provider":
			if !set["provider"] {
				dst = &f.provider
			}
		case "openai_base_url":
			if !set["base-url"] {
				dst = &f.baseURL
			}
		case "model_reasoning_effort":
			dst = &cf.effort
		case "approval_policy":
			dst = &cf.approval
		case "sandbox_mode":
			if !set["sandbox"] && !set["s"] {
				dst = &cf.sandbox
			}
		default:
			cf.ignored = append(cf.ignored, k)
			continue
		}
		s, err := str()
		if err != nil {
			return err
		}
		if dst != nil {
			*dst = s
		}
	}
	for name, why := range refusedExecFlags {
		if set[name] {
			return fmt.Errorf("--%s is not supported: %s", name, why.why)
		}
	}
	switch cf.color {
	case "always", "never", "auto":
	default:
		return fmt.Errorf("--color %q: expected always, never or auto", cf.color)
	}
	if cf.localProvider != "" && !cf.oss {
		return errors.New("--local-provider goes with --oss")
	}
	if cf.oss {
		lp := cf.localProvider
		if lp == "" {
			lp = "ollama"
		}
		url, ok := localProviders[lp]
		if !ok {
			return fmt.Errorf("--local-provider %q: expected ollama or lmstudio", cf.localProvider)
		}
		if set["base-url"] || set["provider"] {
			return errors.New("--oss chooses the provider: it goes with neither --base-url nor --provider")
		}
		f.baseURL, f.wire = url, "chat"
		if f.model == "" {
			f.model = ossDefaultModel
		}
	}
	if cf.yolo {
		if cf.sandbox != "" && cf.sandbox != string(protocol.SandboxDangerFullAccess) {
			return fmt.Errorf("--dangerously-bypass-approvals-and-sandbox turns the sandbox off; it goes with no --sandbox %s", cf.sandbox)
		}
		if cf.approval != "" && cf.approval != string(protocol.ApprovalNever) {
			return fmt.Errorf("--dangerously-bypass-approvals-and-sandbox asks for no approval; it goes with no approval_policy %s", cf.approval)
		}
		cf.sandbox, cf.approval = string(protocol.SandboxDangerFullAccess), string(protocol.ApprovalNever)
	}
	if cf.sandbox != "" && !protocol.SandboxMode(cf.sandbox).Valid() {
		return fmt.Errorf("unknown sandbox mode %q, expected read-only, workspace-write or danger-full-access", cf.sandbox)
	}
	switch protocol.ApprovalPolicy(cf.approval) {
	case "on-failure": // deprecated in codex; the closest apserver policy
		cf.approval = string(protocol.ApprovalOnRequest)
	case "", protocol.ApprovalUntrusted, protocol.ApprovalOnRequest, protocol.ApprovalNever:
	default:
		return fmt.Errorf("unknown approval_policy %q, expected untrusted, on-request, on-failure or never", cf.approval)
	}
	return nil
}

// warnIgnored says on stderr what was accepted but has no effect.
func (cf *codexExecFlags) warnIgnored(w io.Writer) {
	var ign []string
	for _, k := range cf.ignored {
		ign = append(ign, "--config "+k)
	}
	for _, d := range cf.addDirs {
		ign = append(ign, "--add-dir "+d)
	}
	if cf.threadSource != "" {
		ign = append(ign, "--thread-source")
	}
	if cf.cyberAccess != "" {
		ign = append(ign, "--cyber-access-program")
	}
	for _, ft := range cf.features {
		ign = append(ign, "--enable/--disable "+ft)
	}
	if cf.hookTrust {
		ign = append(ign, "--dangerously-bypass-hook-trust")
	}
	if len(ign) > 0 {
		fmt.Fprintf(w, "apserver exec: ignored (no apserver equivalent): %s\n", strings.Join(ign, ", "))
	}
}

// workDir is the directory exec works in: --cd, else the current one.
func (cf *codexExecFlags) workDir() (string, error) {
	if cf.cd == "" {
		return os.Getwd()
	}
	d, err := filepath.Abs(cf.cd)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", fmt.Errorf("--cd %s: not a directory", cf.cd)
	}
	return d, nil
}

// schema reads --output-schema: a JSON object.
func (cf *codexExecFlags) schema() (json.RawMessage, error) {
	if cf.outputSchema == "" {
		return nil, nil
	}
	b, err := os.ReadFile(cf.outputSchema)
	if err != nil {
		return nil, fmt.Errorf("--output-schema: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("--output-schema %s: not a JSON object: %v", cf.outputSchema, err)
	}
	return json.RawMessage(b), nil
}

// input is the user input: the prompt, then each --image as a local image.
func (cf *codexExecFlags) input(prompt string) ([]protocol.UserInput, error) {
	in := []protocol.UserInput{protocol.TextInput(prompt)}
	for _, p := range cf.images {
		abs, err := filepath.Abs(p)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("--image %s: %w", p, err)
		}
		in = append(in, protocol.UserInput{Type: "localImage", Path: abs})
	}
	return in, nil
}

// execGetenv is the environment config.Load sees: CODEX_API_KEY, which the
// Codex SDK sets from its apiKey option, is the default provider's key.
func execGetenv(k string) string {
	if k == config.EnvOpenAIAPIKey {
		if v := os.Getenv("CODEX_API_KEY"); v != "" {
			return v
		}
	}
	return os.Getenv(k)
}

// execArgs splits the words after the flags: `resume ID [prompt…]` or
// `[prompt…]`.
func execArgs(words []string) (resumeID string, prompt string, err error) {
	if len(words) > 0 && words[0] == "resume" {
		if len(words) < 2 || strings.HasPrefix(words[1], "-") {
			return "", "", errors.New("resume needs a thread id: apserver exec resume ID [prompt]")
		}
		return words[1], strings.TrimSpace(strings.Join(words[2:], " ")), nil
	}
	return "", strings.TrimSpace(strings.Join(words, " ")), nil
}

// readPrompt reads the prompt from stdin when it is "-", or missing and
// stdin is not a terminal or /dev/null (the Codex SDK writes it there).
func readPrompt(prompt string, stdin *os.File) (string, error) {
	if prompt != "" && prompt != "-" {
		return prompt, nil
	}
	if prompt == "" {
		fi, err := stdin.Stat()
		if err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return "", nil
		}
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// parseInterspersed parses fs from args and returns the words that are not
// flags: flags may come after them, as with codex exec ("fix it --model x").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return words, nil
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
