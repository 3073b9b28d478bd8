package blueprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// Tree is a version's plan tree: its nodes in reading order, which is
// also the tree's preorder (a parent before its children).
type Tree struct {
	Nodes []protocol.BlueprintNode
}

// Index maps node ids to their position in Nodes.
func (t *Tree) Index() map[string]int {
	m := make(map[string]int, len(t.Nodes))
	for i, n := range t.Nodes {
		m[n.ID] = i
	}
	return m
}

// MergeError is an outline that cannot make a strict tree.
type MergeError struct{ Msg string }

func (e *MergeError) Error() string { return e.Msg }

// Merge builds the tree from the nodes every chunk's pages found, in any
// order. Nodes that start at the same offset are one node (a chunk repeats
// the headings it continues inside): the first found keeps its kind, the
// others fill what it left empty. The parent of a node is the nearest
// node before it that contains it: by Markdown heading levels when both
// have one, else by kind. A node whose containing heading is of the same
// or a larger kind is an error naming both: kinds are strict.
func Merge(d *Doc, found []Found) (*Tree, error) {
	fs := slices.Clone(found)
	slices.SortStableFunc(fs, func(a, b Found) int { return a.Start - b.Start })
	// Fold the repeats (one heading, one node).
	uniq := fs[:0]
	for _, f := range fs {
		if len(uniq) > 0 && uniq[len(uniq)-1].Start == f.Start {
			u := &uniq[len(uniq)-1]
			if u.Summary == "" {
				u.Summary = f.Summary
			}
			if u.Priority == "" {
				u.Priority = f.Priority
			}
			if u.Risk == "" {
				u.Risk = f.Risk
			}
			if u.Estimate == "" {
				u.Estimate = f.Estimate
			}
			for _, dep := range f.DependsOn {
				if !slices.Contains(u.DependsOn, dep) {
					u.DependsOn = append(u.DependsOn, dep)
				}
			}
			continue
		}
		uniq = append(uniq, f)
	}
	fs = uniq

	nodes := make([]protocol.BlueprintNode, len(fs))
	parent := make([]int, len(fs))
	var stack []int
	for i, f := range fs {
		for len(stack) > 0 {
			t := fs[stack[len(stack)-1]]
			if f.Level > 0 && t.Level > 0 {
				if t.Level >= f.Level {
					stack = stack[:len(stack)-1]
					continue
				}
				if t.Kind.Level() >= f.Kind.Level() {
					return nil, &MergeError{Msg: fmt.Sprintf("%s %q (byte %d) sits under %s %q (byte %d): a %s cannot hold a %s",
						f.Kind, f.Title, f.Start, t.Kind, t.Title, t.Start, t.Kind, f.Kind)}
				}
				break
			}
			if t.Kind.Level() >= f.Kind.Level() {
				stack = stack[:len(stack)-1]
				continue
			}
			break
		}
		parent[i] = -1
		if len(stack) > 0 {
			parent[i] = stack[len(stack)-1]
		}
		stack = append(stack, i)

		secEnd := len(d.Text)
		if h := searchHeading(d.Headings, f.Start+1); h < len(d.Headings) {
			secEnd = d.Headings[h].Start
		}
		if i+1 < len(fs) && fs[i+1].Start < secEnd {
			secEnd = fs[i+1].Start
		}
		nodes[i] = protocol.BlueprintNode{
			Kind: f.Kind, Title: f.Title, Summary: f.Summary,
			Start: f.Start, End: secEnd, SectionEnd: secEnd, Order: i,
			Status: protocol.NodePlanned, Priority: f.Priority, Risk: f.Risk, Estimate: f.Estimate,
			Hash: hashText(d.Text[f.Start:secEnd]),
		}
	}
	// Anchors (unique among siblings), ids, depths.
	seen := make(map[string]int, len(fs))
	for i := range nodes {
		label := anchorLabel(d, fs[i])
		var path []string
		if p := parent[i]; p >= 0 {
			path = nodes[p].Anchor
			nodes[i].ParentID = nodes[p].ID
			nodes[i].Depth = nodes[p].Depth + 1
		}
		key := strings.Join(path, "\x1f") + "\x1f" + label
		seen[key]++
		if n := seen[key]; n > 1 {
			label = fmt.Sprintf("%s #%d", label, n)
		}
		nodes[i].Anchor = append(slices.Clip(path), label)
		nodes[i].ID = AnchorID(nodes[i].Anchor)
	}
	// Ends: a parent's span holds its children's (preorder: children
	// follow their parent).
	for i := len(nodes) - 1; i >= 0; i-- {
		if p := parent[i]; p >= 0 && nodes[i].End > nodes[p].End {
			nodes[p].End = nodes[i].End
		}
	}
	t := &Tree{Nodes: nodes}
	resolveDeps(t, fs)
	return t, nil
}

// anchorLabel is the text of the heading (or line) a node starts at.
func anchorLabel(d *Doc, f Found) string {
	if f.Level > 0 {
		if h := searchHeading(d.Headings, f.Start); h < len(d.Headings) && d.Headings[h].Start == f.Start {
			return d.Headings[h].Text
		}
	}
	line := d.Text[f.Start:]
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// AnchorID is the stable id of the node at an anchor path.
func AnchorID(anchor []string) string {
	h := sha256.New()
	for _, a := range anchor {
		h.Write([]byte(a))
		h.Write([]byte{0x1f})
	}
	return "n_" + hex.EncodeToString(h.Sum(nil)[:8])
}

func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// resolveDeps turns the dependencies the planner named (titles or
// headings) into node ids; the names that match no node, or that would
// close a cycle, are kept in Unresolved.
func resolveDeps(t *Tree, fs []Found) {
	byName := make(map[string]string, 2*len(t.Nodes))
	for _, n := range t.Nodes {
		for _, k := range []string{norm(n.Title), norm(n.Anchor[len(n.Anchor)-1])} {
			if _, ok := byName[k]; !ok {
				byName[k] = n.ID
			}
		}
	}
	idx := t.Index()
	for i := range t.Nodes {
		n := &t.Nodes[i]
		for _, dep := range fs[i].DependsOn {
			id, ok := byName[norm(dep)]
			switch {
			case !ok:
				n.Unresolved = append(n.Unresolved, dep)
			case id == n.ID || slices.Contains(n.DependsOn, id):
			case reaches(t.Nodes, idx, idx[id], i):
				n.Unresolved = append(n.Unresolved, dep+" (would close a cycle)")
			default:
				n.DependsOn = append(n.DependsOn, id)
			}
		}
	}
}

// reaches reports whether node to is among the dependencies of node from,
// directly or not.
func reaches(nodes []protocol.BlueprintNode, idx map[string]int, from, to int) bool {
	seen := map[int]bool{from: true}
	todo := []int{from}
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if i == to {
			return true
		}
		for _, dep := range nodes[i].DependsOn {
			if j, ok := idx[dep]; ok && !seen[j] {
				seen[j] = true
				todo = append(todo, j)
			}
		}
	}
	return false
}

// CheckDeps reports a dependency cycle, naming its nodes. Dependencies on
// ids that are not in nodes are ignored here (see UnknownDeps).
func CheckDeps(nodes []protocol.BlueprintNode) error {
	idx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		idx[n.ID] = i
	}
	state := make([]uint8, len(nodes)) // 0 new, 1 on the path, 2 done
	var path []int
	var visit func(i int) error
	visit = func(i int) error {
		state[i] = 1
		path = append(path, i)
		for _, dep := range nodes[i].DependsOn {
			j, ok := idx[dep]
			if !ok {
				continue
			}
			switch state[j] {
			case 1:
				k := slices.Index(path, j)
				var names []string
				for _, p := range path[k:] {
					names = append(names, fmt.Sprintf("%s (%s)", nodes[p].ID, nodes[p].Title))
				}
				return fmt.Errorf("dependency cycle: %s -> %s", strings.Join(names, " -> "), nodes[j].ID)
			case 0:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = 2
		return nil
	}
	for i := range nodes {
		if state[i] == 0 && len(nodes[i].DependsOn) > 0 {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// UnknownDeps returns the ids of deps that are not nodes of t.
func UnknownDeps(t *Tree, deps []string) []string {
	idx := t.Index()
	var out []string
	for _, d := range deps {
		if _, ok := idx[d]; !ok {
			out = append(out, d)
		}
	}
	return out
}
