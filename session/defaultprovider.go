package session

import (
	"context"
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
