package fuzzy

import (
	"context"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// fuzzyLimit is how many matches fuzzyFileSearch returns.
const fuzzyLimit = 50

// fuzzySkip are directories the file search never enters.
var fuzzySkip = map[string]bool{".git": true, "node_modules": true, ".hg": true, ".svn": true, ".apserver": true}

// Service answers fuzzyFileSearch. Any goroutine may use it.
type Service struct {
	ctx context.Context // ended by Close: every search stops

	stop context.CancelFunc

	// mu guards running: a cancellationToken's search.
	mu      sync.Mutex
	running map[string]*fuzzyRun
}

type fuzzyRun struct{ cancel context.CancelFunc }

// New returns a Service whose searches run until Close.
func New() *Service {
	ctx, stop := context.WithCancel(context.Background())
	return &Service{ctx: ctx, stop: stop}
}

// Close ends every search (each answers with no files).
func (s *Service) Close() { s.stop() }

// FileSearch implements fuzzyFileSearch (the @-mention picker): the
// files and directories under roots whose relative path contains the
// query's characters in order (case-insensitive), best first. A new search
// with the same cancellationToken cancels the one before it, which answers
// with no files.
func (s *Service) FileSearch(_ context.Context, p protocol.FuzzyFileSearchParams, reply port.Reply) {
	ctx, cancel := context.WithCancel(s.ctx)
	done := func() {}
	if tok := p.CancellationToken; tok != nil {
		fz, run := s, &fuzzyRun{cancel: cancel}
		fz.mu.Lock()
		if prev := fz.running[*tok]; prev != nil {
			prev.cancel()
		}
		if fz.running == nil {
			fz.running = map[string]*fuzzyRun{}
		}
		fz.running[*tok] = run
		fz.mu.Unlock()
		done = func() {
			fz.mu.Lock()
			if fz.running[*tok] == run {
				delete(fz.running, *tok)
			}
			fz.mu.Unlock()
		}
	}
	go func() {
		defer cancel()
		defer done()
		files := fuzzySearch(ctx, p.Roots, p.Query)
		if ctx.Err() != nil {
			files = []protocol.FuzzyFileMatch{}
		}
		reply(protocol.FuzzyFileSearchResult{Files: files}, nil)
	}()
}

// fuzzySearch walks roots and keeps the fuzzyLimit best matches.
func fuzzySearch(ctx context.Context, roots []string, query string) []protocol.FuzzyFileMatch {
	q := []rune(strings.ToLower(query))
	best := make([]protocol.FuzzyFileMatch, 0, fuzzyLimit+1)
	n := 0
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if n++; n&1023 == 0 && ctx.Err() != nil {
				return fs.SkipAll
			}
			if err != nil || path == root {
				return nil
			}
			if d.IsDir() && fuzzySkip[d.Name()] {
				return fs.SkipDir
			}
			rel := path[len(root)+1:]
			score, idx, ok := fuzzyScore(rel, q)
			if !ok {
				return nil
			}
			if len(best) == fuzzyLimit && score <= best[len(best)-1].Score {
				return nil
			}
			typ := "file"
			if d.IsDir() {
				typ = "directory"
			}
			mt := protocol.FuzzyFileMatch{Root: root, Path: rel, FileName: d.Name(), MatchType: typ, Score: score, Indices: idx}
			i := sort.Search(len(best), func(i int) bool { return best[i].Score < score })
			best = append(best, protocol.FuzzyFileMatch{})
			copy(best[i+1:], best[i:])
			best[i] = mt
			if len(best) > fuzzyLimit {
				best = best[:fuzzyLimit]
			}
			return nil
		})
	}
	return best
}

// fuzzyScore matches q (lower case) as a subsequence of path, greedily from
// the end so that the file name is preferred, and scores the match: higher
// for consecutive characters, for matches at word starts and in the file
// name, and for shorter paths. indices are the matched runes' positions.
func fuzzyScore(path string, q []rune) (uint32, []uint32, bool) {
	if len(q) == 0 {
		return 1, nil, true
	}
	rs := []rune(strings.ToLower(path))
	if len(rs) < len(q) {
		return 0, nil, false
	}
	idx := make([]uint32, len(q))
	j := len(q) - 1
	for i := len(rs) - 1; i >= 0 && j >= 0; i-- {
		if rs[i] == q[j] {
			idx[j] = uint32(i)
			j--
		}
	}
	if j >= 0 {
		return 0, nil, false
	}
	nameStart := strings.LastIndexByte(path, '/') + 1
	nameStart = utf8.RuneCountInString(path[:nameStart])
	score := 1000
	for k, p := range idx {
		if int(p) >= nameStart {
			score += 10
		}
		if p == 0 || strings.ContainsRune("/_-. ", rs[p-1]) {
			score += 8
		}
		if k > 0 && idx[k-1]+1 == p {
			score += 15
		}
	}
	score -= len(rs)
	if score < 1 {
		score = 1
	}
	return uint32(score), idx, true
}
