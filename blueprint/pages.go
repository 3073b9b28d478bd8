package blueprint

import (
	"errors"
	"fmt"
	"maps"

	"github.com/apserver/apserver/protocol"
)

// Step is what a Pages core asks its driver to do next.
type Step int

const (
	// Ask: send the request Prompt returns, and Feed the answer.
	Ask Step = iota + 1
	// Done: every page is in; Items holds them.
	Done
	// Failed: the planner's answers are not usable; Err says why.
	Failed
)

func (s Step) String() string {
	switch s {
	case Ask:
		return "ask"
	case Done:
		return "done"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// Pages is the pure core of a paged structured answer (a chunk's outline,
// a node's tasks): it says which request to send, validates each answer,
// asks once more with a stricter instruction after an invalid one, follows
// the cursor page by page, and ends with the items or an error. The driver
// sends the requests and feeds the answers; nothing here does I/O.
type Pages[T any] struct {
	// What names the subject in errors ("chunk 3 (bytes 0-100)").
	What string
	// prompt builds the request for a cursor ("" first) and, on a retry,
	// the reason the last answer was refused.
	prompt func(cursor, strict string) string
	// parse validates an answer: its items and the next cursor. It is
	// called once per answer and may keep state across accepted pages.
	parse func(raw []byte) ([]T, string, error)

	cursor, strict string
	retried        bool
	pages          int
	seen           map[string]bool
	items          []T
	err            error
	step           Step
}

// NewPages starts a paged answer.
func NewPages[T any](what string, prompt func(cursor, strict string) string, parse func(raw []byte) ([]T, string, error)) *Pages[T] {
	return &Pages[T]{What: what, prompt: prompt, parse: parse, seen: map[string]bool{}, step: Ask}
}

// Step is what to do now.
func (p *Pages[T]) Step() Step { return p.step }

// Prompt is the request to send (when Step is Ask).
func (p *Pages[T]) Prompt() string { return p.prompt(p.cursor, p.strict) }

// Items are the items of every page (when Step is Done).
func (p *Pages[T]) Items() []T { return p.items }

// Err is why the answers were refused (when Step is Failed).
func (p *Pages[T]) Err() error { return p.err }

// Feed takes the answer to the last Prompt and returns the next step.
func (p *Pages[T]) Feed(raw []byte) Step {
	if p.step != Ask {
		return p.step
	}
	items, next, err := p.parse(raw)
	if err != nil {
		if p.retried {
			p.fail(fmt.Errorf("%w (after a retry with a stricter instruction)", err))
			return p.step
		}
		p.retried = true
		p.strict = err.Error()
		var ae *AnswerError
		var te *TaskAnswerError
		switch {
		case errors.As(err, &ae):
			p.strict = ae.Msg
		case errors.As(err, &te):
			p.strict = te.Msg
		}
		return p.step
	}
	p.retried, p.strict = false, ""
	p.items = append(p.items, items...)
	p.pages++
	switch {
	case next == "":
		p.step = Done
	case p.seen[next]:
		p.fail(fmt.Errorf("%s: cursor %q given twice", p.What, next))
	case p.pages >= MaxPages:
		p.fail(fmt.Errorf("%s: more than %d pages", p.What, MaxPages))
	default:
		p.seen[next] = true
		p.cursor = next
	}
	return p.step
}

func (p *Pages[T]) fail(err error) {
	p.err, p.step, p.items = err, Failed, nil
}

// ChunkPages is the Pages core of a chunk's outline, k nodes a page.
func ChunkPages(d *Doc, c Chunk, total, k int) *Pages[Found] {
	at := Begin(c)
	return NewPages(fmt.Sprintf("chunk %d (bytes %d-%d)", c.Index+1, c.Start, c.End),
		func(cursor, strict string) string { return Prompt(d, c, total, cursor, k, strict) },
		func(raw []byte) ([]Found, string, error) {
			pg, err := ParsePage(d, c, at, k, raw)
			if err != nil {
				return nil, "", err
			}
			at = pg.At
			return pg.Nodes, pg.Next, nil
		})
}

// TaskPages is the Pages core of node n's tasks, k tasks a page.
func TaskPages(d *Doc, n protocol.BlueprintNode, k int) *Pages[TaskFound] {
	seen := map[string]bool{}
	return NewPages(fmt.Sprintf("tasks of node %s", n.ID),
		func(cursor, strict string) string { return TasksPrompt(d, n, cursor, k, strict) },
		func(raw []byte) ([]TaskFound, string, error) {
			page := maps.Clone(seen)
			items, next, err := ParseTasksPage(d, n, k, page, raw)
			if err != nil {
				return nil, "", err
			}
			seen = page
			return items, next, nil
		})
}
