// Package specgen generates long specifications of known structure, and
// the planner's answers for them, for the blueprint tests and benchmarks.
// The same seed makes the same document, byte for byte.
//
// A specification has phases (#), epics (##), features (###), stories
// (####) and tasks (#####), a preamble, boilerplate (thematic breaks, code
// fences), normative sentences (MUST, SHALL, must, required) in the text,
// and headings that repeat under different parents ("Acceptance"), so that
// anchors, not titles, tell nodes apart. Answers (Script) repeat, for each
// chunk, the headings the chunk continues inside: the nodes repeated across
// chunk boundaries that blueprint.Merge must fold.
package specgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/apserver/apserver/blueprint"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// Shape is how many children each level has, and how many words each
// node's text holds.
type Shape struct {
	Phases, Epics, Features, Stories, Tasks int
	WordsPerNode                            int
}

// Large is about 500,000 words (≈3.5 MB).
var Large = Shape{Phases: 4, Epics: 5, Features: 5, Stories: 4, Tasks: 3, WordsPerNode: 285}

// Small is a few thousand words, for unit tests.
var Small = Shape{Phases: 2, Epics: 2, Features: 2, Stories: 2, Tasks: 2, WordsPerNode: 60}

// Node is a node the generator wrote: the truth the tree is checked
// against.
type Node struct {
	Kind      protocol.NodeKind
	Heading   string // the heading's text
	Title     string
	Start     int // offset of the heading line
	Level     int
	Parent    int // index in Spec.Nodes, -1 for a phase
	DependsOn []string
}

// Spec is a generated specification.
type Spec struct {
	Text      string
	Words     int
	Nodes     []Node
	Normative int // normative sentences written
}

var vocab = strings.Fields(`system service request response client server account ledger invoice payment
record report export import schedule queue worker retry timeout cache index search filter query page
token session user role permission audit event stream batch window metric alert dashboard config
option default limit quota region replica backup restore migration schema table column field value
message channel topic handler endpoint route gateway proxy policy rule check review approval draft
release version build deploy rollout canary feature flag toggle experiment sample trace span log
document section clause appendix note example figure diagram model plan task story epic phase
the a an of to in for with on by from at as and or when while after before each every any all
quickly safely reliably clearly exactly only also then still again often rarely usually`)

var verbs = strings.Fields(`record validate export import schedule retry cache index filter archive
notify approve reject publish render migrate restore replicate throttle audit encrypt sign verify`)

var nouns = strings.Fields(`invoices payments ledgers accounts sessions reports metrics alerts queues
workers tokens roles quotas backups replicas channels topics endpoints routes policies releases flags`)

var normatives = []string{
	"The %s MUST %s every %s before it is stored.",
	"Operators SHALL %s the %s within one %s.",
	"Each %s must %s its %s on failure.",
	"A signed %s is required to %s the %s.",
}

// Generate writes a specification of the given shape from seed.
func Generate(seed uint64, sh Shape) *Spec {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &gen{r: r, sp: &Spec{}}
	g.b.Grow(sh.Phases * sh.Epics * sh.Features * sh.Stories * sh.Tasks * sh.WordsPerNode * 8)
	g.line("---")
	g.line("title: Generated specification")
	g.line("---")
	g.line("")
	g.line("Generated specification")
	g.line("")
	g.para(sh.WordsPerNode, false)
	g.line("")
	g.line("***")
	g.line("")
	for p := 1; p <= sh.Phases; p++ {
		pi := g.heading(1, protocol.KindPhase, fmt.Sprintf("Phase %d: %s", p, g.title()), -1, nil)
		g.body(sh.WordsPerNode)
		for e := 1; e <= sh.Epics; e++ {
			ei := g.heading(2, protocol.KindEpic, fmt.Sprintf("Epic %d.%d: %s", p, e, g.title()), pi, nil)
			g.body(sh.WordsPerNode)
			for f := 1; f <= sh.Features; f++ {
				fi := g.heading(3, protocol.KindFeature, fmt.Sprintf("Feature %d.%d.%d: %s", p, e, f, g.title()), ei, nil)
				g.body(sh.WordsPerNode)
				for s := 1; s <= sh.Stories; s++ {
					// The last story of a feature is always "Acceptance":
					// the same heading under every feature.
					h := fmt.Sprintf("Story %d.%d.%d.%d: %s", p, e, f, s, g.title())
					if s == sh.Stories {
						h = "Acceptance"
					}
					si := g.heading(4, protocol.KindStory, h, fi, nil)
					g.body(sh.WordsPerNode)
					prev := ""
					for t := 1; t <= sh.Tasks; t++ {
						title := fmt.Sprintf("Task %d.%d.%d.%d.%d: %s", p, e, f, s, t, g.title())
						var deps []string
						if prev != "" {
							deps = []string{prev}
						}
						g.heading(5, protocol.KindTask, title, si, deps)
						g.body(sh.WordsPerNode)
						prev = title
					}
				}
			}
		}
	}
	g.sp.Text = g.b.String()
	return g.sp
}

type gen struct {
	r  *rand.Rand
	b  strings.Builder
	sp *Spec
}

func (g *gen) line(s string) {
	g.b.WriteString(s)
	g.b.WriteByte('\n')
}

func (g *gen) pick(words []string) string { return words[g.r.IntN(len(words))] }

func (g *gen) title() string {
	v := g.pick(verbs)
	return strings.ToUpper(v[:1]) + v[1:] + " " + g.pick(nouns)
}

func (g *gen) heading(level int, kind protocol.NodeKind, text string, parent int, deps []string) int {
	g.sp.Nodes = append(g.sp.Nodes, Node{Kind: kind, Heading: text, Title: text, Start: g.b.Len(), Level: level, Parent: parent, DependsOn: deps})
	g.line(strings.Repeat("#", level) + " " + text)
	g.line("")
	g.sp.Words += len(strings.Fields(text))
	return len(g.sp.Nodes) - 1
}

// body writes about n words: paragraphs of sentences, one in five
// normative, and now and then a fenced example.
func (g *gen) body(n int) {
	g.para(n, true)
	if g.r.IntN(8) == 0 {
		g.line("```")
		g.line("example: " + g.pick(nouns))
		g.line("```")
		g.line("")
		g.sp.Words += 2
	}
}

// para writes about n words; normative sentences only when norm is set
// (the preamble has none: no node holds it).
func (g *gen) para(n int, norm bool) {
	words := 0
	inPara := 0
	for words < n {
		if norm && g.r.IntN(5) == 0 {
			f := normatives[g.r.IntN(len(normatives))]
			s := fmt.Sprintf(f, g.pick(nouns), g.pick(verbs), g.pick(nouns))
			g.b.WriteString(s)
			words += len(strings.Fields(s))
			g.sp.Normative++
		} else {
			k := 8 + g.r.IntN(12)
			for i := 0; i < k; i++ {
				w := g.pick(vocab)
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				g.b.WriteString(w)
				if i < k-1 {
					g.b.WriteByte(' ')
				}
			}
			g.b.WriteByte('.')
			words += k
		}
		inPara++
		if inPara >= 6 || words >= n {
			g.b.WriteString("\n\n")
			inPara = 0
		} else {
			g.b.WriteByte(' ')
		}
	}
	g.sp.Words += words
}

// PageJSON is the JSON of one page of a chunk's outline, as the planner
// writes it.
type PageJSON struct {
	Nodes []PageNode `json:"nodes"`
	Next  string     `json:"next"`
}

// PageNode is one node of a page.
type PageNode struct {
	Kind      protocol.NodeKind     `json:"kind"`
	Heading   string                `json:"heading"`
	Title     string                `json:"title"`
	Summary   string                `json:"summary"`
	Priority  protocol.NodePriority `json:"priority"`
	Risk      protocol.NodeRisk     `json:"risk"`
	Estimate  protocol.Estimate     `json:"estimate"`
	DependsOn []string              `json:"dependsOn"`
}

// ChunkPages is the planner's answer for one chunk: the marker of each
// page's request and the page's JSON.
type ChunkPages struct {
	Chunk   blueprint.Chunk
	Markers []string
	Pages   []string
}

// Answers are the planner's correct answers for every chunk of sp split
// with the budget, k nodes a page: each chunk lists the headings it
// continues inside, then the nodes that start in it.
func (sp *Spec) Answers(d *blueprint.Doc, budget, k int) []ChunkPages {
	if k <= 0 {
		k = blueprint.DefaultPageNodes
	}
	chunks := blueprint.Split(d, budget)
	byStart := make(map[int]int, len(sp.Nodes))
	for i, n := range sp.Nodes {
		byStart[n.Start] = i
	}
	var out []ChunkPages
	ni := 0
	for _, c := range chunks {
		var nodes []PageNode
		for _, hi := range c.Context {
			if i, ok := byStart[d.Headings[hi].Start]; ok {
				nodes = append(nodes, sp.pageNode(i))
			}
		}
		for ni < len(sp.Nodes) && sp.Nodes[ni].Start < c.End {
			nodes = append(nodes, sp.pageNode(ni))
			ni++
		}
		cp := ChunkPages{Chunk: c}
		cursor := ""
		for p := 0; p == 0 || p*k < len(nodes); p++ {
			page := PageJSON{Nodes: nodes[p*k : min((p+1)*k, len(nodes))]}
			if page.Nodes == nil {
				page.Nodes = []PageNode{}
			}
			if (p+1)*k < len(nodes) {
				page.Next = fmt.Sprintf("p%d", p+2)
			}
			b, _ := json.Marshal(page)
			cp.Markers = append(cp.Markers, blueprint.Marker(c, len(chunks), cursor))
			cp.Pages = append(cp.Pages, string(b))
			cursor = page.Next
		}
		out = append(out, cp)
	}
	return out
}

func (sp *Spec) pageNode(i int) PageNode {
	n := sp.Nodes[i]
	pr := []protocol.NodePriority{protocol.PriorityHigh, protocol.PriorityMedium, protocol.PriorityLow}[i%3]
	est := []protocol.Estimate{"XS", "S", "M", "L", "XL"}[i%5]
	deps := n.DependsOn
	if deps == nil {
		deps = []string{}
	}
	return PageNode{Kind: n.Kind, Heading: n.Heading, Title: n.Title, Summary: "Summary of " + n.Title + ".",
		Priority: pr, Risk: protocol.NodeRiskLow, Estimate: est, DependsOn: deps}
}

// Script is a scripted model answering every page of answers.
func Script(answers []ChunkPages) scripted.Script {
	var sc scripted.Script
	for _, cp := range answers {
		for i, m := range cp.Markers {
			sc.Rules = append(sc.Rules, scripted.Rule{Match: m, Steps: []scripted.Step{{Text: cp.Pages[i], Deltas: 1}}})
		}
	}
	return sc
}

// Edit returns a copy of sp with a sentence added at the end of the own
// text of each node named (by index): those sections change, every other
// keeps its bytes; offsets after an edit move.
func (sp *Spec) Edit(nodes ...int) *Spec {
	out := &Spec{Words: sp.Words, Normative: sp.Normative, Nodes: append([]Node(nil), sp.Nodes...)}
	var b strings.Builder
	prev := 0
	shift := 0
	edits := map[int]bool{}
	for _, i := range nodes {
		edits[i] = true
	}
	for i := range sp.Nodes {
		out.Nodes[i].Start += shift
		if !edits[i] {
			continue
		}
		end := len(sp.Text)
		if i+1 < len(sp.Nodes) {
			end = sp.Nodes[i+1].Start
		}
		add := fmt.Sprintf("Edited in version two (node %d).\n\n", i)
		b.WriteString(sp.Text[prev:end])
		b.WriteString(add)
		prev = end
		shift += len(add)
	}
	b.WriteString(sp.Text[prev:])
	out.Text = b.String()
	return out
}
