package blueprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// DefaultPageNodes is K: the most nodes the planner may put in one answer.
// A chunk with more nodes is answered in pages linked by a cursor, so no
// answer is ever long enough to be cut off.
const DefaultPageNodes = 40

// MaxPages bounds the pages of one chunk: a planner that keeps answering
// with a cursor fails the chunk instead of looping.
const MaxPages = 64

// Instructions is the planner's system prompt for outlining a chunk.
const Instructions = `You turn one chunk of a long specification into a plan outline.
Return the plan nodes the chunk's headings start, in reading order, as JSON matching the schema:
{"nodes":[{"kind":"phase|epic|feature|story|task","heading":"the exact text of the heading the node starts at","title":"short title","summary":"one or two sentences","priority":"critical|high|medium|low|","risk":"low|medium|high|","estimate":"XS|S|M|L|XL|","dependsOn":["title of another node"]}],"next":"cursor or empty"}
Kinds nest phase > epic > feature > story > task; a node never sits above a node of a larger kind.
Give at most the number of nodes the request allows; when more remain, set "next" to a cursor and you will be asked again with it. When none remain, "next" is "".
Answer with the JSON object only.`

// StrictInstruction is added to a request repeated after an invalid answer.
const StrictInstruction = "Your previous answer was rejected: %s. Answer again with one JSON object only, exactly matching the schema: no prose, no code fence, every heading copied exactly from the chunk."

// Schema is the JSON Schema of a page (structured output).
var Schema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["nodes","next"],"properties":{
"nodes":{"type":"array","items":{"type":"object","additionalProperties":false,
"required":["kind","heading","title","summary","priority","risk","estimate","dependsOn"],
"properties":{"kind":{"type":"string","enum":["phase","epic","feature","story","task"]},
"heading":{"type":"string"},"title":{"type":"string"},"summary":{"type":"string"},
"priority":{"type":"string","enum":["critical","high","medium","low",""]},
"risk":{"type":"string","enum":["low","medium","high",""]},
"estimate":{"type":"string","enum":["XS","S","M","L","XL",""]},
"dependsOn":{"type":"array","items":{"type":"string"}}}}},
"next":{"type":"string"}}}`)

// Marker is the first line of a chunk's prompt: it names the chunk and the
// page, so that a log (or a scripted model) tells the requests apart.
func Marker(c Chunk, total int, cursor string) string {
	if cursor == "" {
		cursor = "start"
	}
	return fmt.Sprintf("[blueprint chunk %d/%d cursor=%s]", c.Index+1, total, cursor)
}

// Prompt is the user message asking for one page of a chunk's outline.
// strictErr, when non-empty, is the reason the previous answer was
// rejected: the request is the retry.
func Prompt(d *Doc, c Chunk, total int, cursor string, k int, strictErr string) string {
	if k <= 0 {
		k = DefaultPageNodes
	}
	var b strings.Builder
	text := d.Text[c.Start:c.End]
	b.Grow(len(text) + 512)
	b.WriteString(Marker(c, total, cursor))
	b.WriteString("\n")
	fmt.Fprintf(&b, "Chunk %d of %d: bytes %d-%d of %d.\n", c.Index+1, total, c.Start, c.End, len(d.Text))
	if len(c.Context) > 0 {
		b.WriteString("It continues inside: ")
		for i, hi := range c.Context {
			if i > 0 {
				b.WriteString(" > ")
			}
			fmt.Fprintf(&b, "%q", d.Headings[hi].Text)
		}
		b.WriteString(". You may repeat those nodes by their heading.\n")
	}
	fmt.Fprintf(&b, "At most %d nodes in this answer.", k)
	if cursor != "" {
		fmt.Fprintf(&b, " Continue after cursor %q.", cursor)
	}
	b.WriteString("\n")
	if strictErr != "" {
		fmt.Fprintf(&b, StrictInstruction+"\n", strictErr)
	}
	b.WriteString("----- chunk -----\n")
	b.WriteString(text)
	b.WriteString("\n----- end of chunk -----\n")
	return b.String()
}

// answer is the JSON a page holds.
type answer struct {
	Nodes []answerNode `json:"nodes"`
	Next  *string      `json:"next"`
}

type answerNode struct {
	Kind      protocol.NodeKind     `json:"kind"`
	Heading   string                `json:"heading"`
	Title     string                `json:"title"`
	Summary   string                `json:"summary"`
	Priority  protocol.NodePriority `json:"priority"`
	Risk      protocol.NodeRisk     `json:"risk"`
	Estimate  protocol.Estimate     `json:"estimate"`
	DependsOn []string              `json:"dependsOn"`
}

// Found is a node of a page, its start resolved in the document.
type Found struct {
	Kind      protocol.NodeKind     `json:"kind"`
	Title     string                `json:"title"`
	Summary   string                `json:"summary,omitempty"`
	Priority  protocol.NodePriority `json:"priority,omitempty"`
	Risk      protocol.NodeRisk     `json:"risk,omitempty"`
	Estimate  protocol.Estimate     `json:"estimate,omitempty"`
	DependsOn []string              `json:"dependsOn,omitempty"`
	// Start is the offset of the heading (or line) the node starts at;
	// Level its Markdown level (0 for a plain line).
	Start int `json:"start"`
	Level int `json:"level"`
}

// AnswerError is an invalid answer for a chunk: it names the chunk, its
// offsets and what was wrong.
type AnswerError struct {
	Chunk      int // 1-based, as in the prompt
	Start, End int
	Msg        string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("chunk %d (bytes %d-%d): %s", e.Chunk, e.Start, e.End, e.Msg)
}

// Position is how far the pages of a chunk got: From is where the next
// node of the chunk may start, Ctx the next of the chunk's Context
// headings a node may repeat (in order, before any node of the chunk).
type Position struct {
	From int `json:"from"`
	Ctx  int `json:"ctx"`
}

// Begin is the position before a chunk's first page.
func Begin(c Chunk) Position { return Position{From: c.Start} }

// Page is a validated page of a chunk's outline.
type Page struct {
	Nodes []Found
	// Next is the cursor for the next page; "" on the last.
	Next string
	// At is the position after the page.
	At Position
}

// ParsePage validates a page of chunk c's outline, read from position at
// (Begin for the first page, the previous page's At after). Every node
// must be of a known kind and have a heading found in the chunk after the
// previous node (or, before the chunk's first node, among the headings
// the chunk continues inside, in order), and valid priority, risk and
// estimate; at most k nodes.
func ParsePage(d *Doc, c Chunk, at Position, k int, raw []byte) (Page, error) {
	if k <= 0 {
		k = DefaultPageNodes
	}
	bad := func(format string, args ...any) (Page, error) {
		return Page{}, &AnswerError{Chunk: c.Index + 1, Start: c.Start, End: c.End, Msg: fmt.Sprintf(format, args...)}
	}
	raw = bytes.TrimSpace(raw)
	var a answer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return bad("the answer is not the JSON object asked for: %v", err)
	}
	if dec.More() {
		return bad("the answer has text after its JSON object")
	}
	if a.Nodes == nil {
		return bad("the answer has no \"nodes\" array")
	}
	if a.Next == nil {
		return bad("the answer has no \"next\" field")
	}
	if len(a.Nodes) > k {
		return bad("%d nodes in one answer, at most %d allowed", len(a.Nodes), k)
	}
	if len(a.Nodes) == 0 && *a.Next != "" {
		return bad("no nodes but a cursor %q", *a.Next)
	}
	p := Page{Next: *a.Next, At: at}
	lo, hi := d.HeadingsIn(c.Start, c.End)
	for i, n := range a.Nodes {
		what := fmt.Sprintf("node %d (%q)", i+1, n.Heading)
		if n.Kind.Level() < 0 {
			return bad("%s: unknown kind %q", what, n.Kind)
		}
		if strings.TrimSpace(n.Heading) == "" {
			return bad("node %d: empty heading", i+1)
		}
		if n.Priority.Rank() < 0 {
			return bad("%s: unknown priority %q", what, n.Priority)
		}
		if !n.Risk.Valid() {
			return bad("%s: unknown risk %q", what, n.Risk)
		}
		if n.Estimate.Rank() < 0 {
			return bad("%s: unknown estimate %q (XS, S, M, L, XL)", what, n.Estimate)
		}
		start, level, ok := resolve(d, c, lo, hi, &p.At, n.Heading)
		if !ok {
			return bad("%s: no such heading in the chunk after the previous node", what)
		}
		title := strings.TrimSpace(n.Title)
		if title == "" {
			title = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(n.Heading), "#")), " ")
		}
		p.Nodes = append(p.Nodes, Found{
			Kind: n.Kind, Title: title, Summary: strings.TrimSpace(n.Summary),
			Priority: n.Priority, Risk: n.Risk, Estimate: n.Estimate,
			DependsOn: n.DependsOn, Start: start, Level: level,
		})
	}
	return p, nil
}

// resolve finds the heading a node names and moves at past it: before the
// chunk's first node, one of the headings the chunk continues inside (in
// order); else a heading of the chunk at or after at.From; else (plain
// text) a line of the chunk at or after at.From.
func resolve(d *Doc, c Chunk, lo, hi int, at *Position, heading string) (start, level int, ok bool) {
	want := norm(heading)
	if at.From == c.Start {
		for j := at.Ctx; j < len(c.Context); j++ {
			if h := d.Headings[c.Context[j]]; norm(h.Text) == want {
				at.Ctx = j + 1
				return h.Start, h.Level, true
			}
		}
	}
	for i := lo; i < hi; i++ {
		h := d.Headings[i]
		if h.Start >= at.From && norm(h.Text) == want {
			at.From = h.Start + 1
			return h.Start, h.Level, true
		}
	}
	// A plain line (documents without Markdown headings), from the start
	// of a line.
	pos := at.From
	if pos > 0 && pos < len(d.Text) && d.Text[pos-1] != '\n' {
		if i := strings.IndexByte(d.Text[pos:], '\n'); i >= 0 {
			pos += i + 1
		} else {
			pos = len(d.Text)
		}
	}
	for pos < c.End {
		e := strings.IndexByte(d.Text[pos:c.End], '\n')
		next := c.End
		if e < 0 {
			e = c.End
		} else {
			e += pos
			next = e + 1
		}
		if line := d.Text[pos:e]; !strings.HasPrefix(strings.TrimSpace(line), "#") && len(line) < 4*len(want)+16 && norm(line) == want {
			at.From = pos + 1
			return pos, 0, true
		}
		pos = next
	}
	return 0, 0, false
}

// norm is a heading's text for comparison: without leading #s and
// emphasis or code marks (* _ `), trimmed, spaces collapsed, lower case.
func norm(s string) string {
	s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "#"))
	s = markup.Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

var markup = strings.NewReplacer("*", "", "_", "", "`", "")
