package blueprint

import (
	"fmt"
	"strconv"

	"github.com/apserver/apserver/protocol"
)

// Read limits.
const (
	DefaultReadLimit = 200
	MaxReadLimit     = 1000
)

// ErrUnknownNode is a node id that is not in the tree.
var ErrUnknownNode = fmt.Errorf("unknown node")

// Read returns a page of the tree in reading order: the subtree of nodeID
// (the whole tree when empty), at most depth levels below it (0: all), at
// most limit nodes from cursor; the cursor of the next page is "" on the
// last.
func Read(t *Tree, nodeID string, depth int, cursor string, limit int) ([]protocol.BlueprintNode, string, error) {
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	limit = min(limit, MaxReadLimit)
	lo, hi, base := 0, len(t.Nodes), 0
	if nodeID != "" {
		i, ok := t.Index()[nodeID]
		if !ok {
			return nil, "", fmt.Errorf("%w %q", ErrUnknownNode, nodeID)
		}
		lo, hi, base = i, i+1, t.Nodes[i].Depth
		for hi < len(t.Nodes) && t.Nodes[hi].Depth > base {
			hi++
		}
	}
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < lo || n > hi {
			return nil, "", fmt.Errorf("%w %q", ErrBadCursor, cursor)
		}
		lo = n
	}
	var out []protocol.BlueprintNode
	for i := lo; i < hi; i++ {
		n := t.Nodes[i]
		if depth > 0 && n.Depth-base > depth {
			continue
		}
		if len(out) == limit {
			return out, strconv.Itoa(i), nil
		}
		out = append(out, n)
	}
	return out, "", nil
}
