package session

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/apserver/apserver/paramcheck"
	"github.com/apserver/apserver/protocol"
)

// SetDefaultProvider implements modelProvider/default/set: the provider,
// which must be configured, becomes the default of new threads (and of
// model/list without a modelProvider) for the rest of this apserver
// process. Codex writes model_provider into its config.toml; apserver does
// not rewrite its configuration, and says so with the answer's filePath
// (the user configuration file that would hold the key) and version.
func (m *Manager) SetDefaultProvider(_ context.Context, p protocol.ModelProviderDefaultSetParams, reply Reply) {
	c := m.opts.Config
	if _, ok := c.Providers[p.ProviderID]; !ok {
		names := make([]string, 0, len(c.Providers))
		for n := range c.Providers {
			names = append(names, n)
		}
		slices.Sort(names)
		reply(nil, paramcheck.Invalid("unknown `providerId` `%s`, expected one of %s", p.ProviderID, strings.Join(names, ", ")))
		return
	}
	id := p.ProviderID
	m.defaultProvider.Store(&id)
	reply(protocol.ConfigWriteResult{
		Status:   "ok",
		Version:  "apserver-session:model_provider=" + id,
		FilePath: m.opts.ConfigSources.UserFile,
	}, nil)
}

// ListRealtime implements thread/realtime/list: apserver has no realtime
// (voice) sessions, so a known thread's list is empty and its coverage
// "unsupported"; an unknown thread is the usual thread-not-found error.
func (m *Manager) ListRealtime(ctx context.Context, p protocol.ThreadRealtimeListParams, reply Reply) {
	if t := m.loaded(p.ThreadID); t != nil {
		reply(emptyRealtime(), nil)
		return
	}
	go func() {
		if _, _, err := m.storedThread(ctx, p.ThreadID); err != nil {
			reply(nil, err)
			return
		}
		reply(emptyRealtime(), nil)
	}()
}

func emptyRealtime() protocol.ThreadRealtimeListResult {
	return protocol.ThreadRealtimeListResult{Coverage: "unsupported", Data: []json.RawMessage{}}
}
