package threadwire

import (
	"encoding/json"
	"path/filepath"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Settings are a thread's effective settings, stored as JSON in its row.
// Turn overrides stick.
type Settings struct {
	Cwd                   string                  `json:"cwd"`
	Model                 string                  `json:"model"`
	Provider              string                  `json:"provider"`
	ApprovalPolicy        protocol.ApprovalPolicy `json:"approvalPolicy"`
	Sandbox               protocol.SandboxMode    `json:"sandbox"`
	Effort                string                  `json:"effort,omitempty"`
	Summary               string                  `json:"summary,omitempty"` // reasoning summary (turn/start summary)
	ServiceTier           string                  `json:"serviceTier,omitempty"`
	BaseInstructions      string                  `json:"baseInstructions,omitempty"`
	DeveloperInstructions string                  `json:"developerInstructions,omitempty"`
	DisabledTools         string                  `json:"disabledTools,omitempty"` // from thread/start config (agenttools.Disabled)
	DynamicTools          string                  `json:"dynamicTools,omitempty"`  // thread/start's dynamicTools as JSON (dynamictools.Encode)
	// Mode is the collaboration mode turn/start set last.
	Mode string `json:"mode,omitempty"`
	// GitInfo is what thread/metadata/update stored.
	GitInfo *protocol.GitInfo `json:"gitInfo,omitempty"`
}

// SettingsFromStore are the settings of a stored thread; def gives what
// the row does not.
func SettingsFromStore(meta store.Thread, def Settings) Settings {
	s := def
	if len(meta.Settings) > 0 {
		_ = json.Unmarshal(meta.Settings, &s)
	}
	if meta.Cwd != "" {
		s.Cwd = meta.Cwd
	}
	if meta.Model != "" {
		s.Model = meta.Model
	}
	if meta.ModelProvider != "" {
		s.Provider = meta.ModelProvider
	}
	if meta.ApprovalPolicy != "" {
		s.ApprovalPolicy = protocol.ApprovalPolicy(meta.ApprovalPolicy)
	}
	if meta.Sandbox != "" {
		s.Sandbox = protocol.SandboxMode(meta.Sandbox)
	}
	return s
}

// ResolveSettings merges the overrides of thread/start, resume or fork
// onto base.
func ResolveSettings(base Settings, o protocol.ThreadSettings) (Settings, error) {
	s := base
	if o.Cwd != nil && *o.Cwd != "" {
		if !filepath.IsAbs(*o.Cwd) {
			return s, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd must be an absolute path: %s", *o.Cwd)
		}
		s.Cwd = filepath.Clean(*o.Cwd)
	}
	if o.Model != nil && *o.Model != "" {
		s.Model = *o.Model
	}
	if o.ModelProvider != nil && *o.ModelProvider != "" {
		s.Provider = *o.ModelProvider // checked by paramcheck
	}
	if o.ServiceTier != nil {
		s.ServiceTier = *o.ServiceTier
	}
	if o.ApprovalPolicy != nil {
		if o.ApprovalPolicy.Granular != nil {
			return s, protocol.Errorf(protocol.ErrInvalidRequest, "askForApproval.granular requires experimentalApi capability")
		}
		s.ApprovalPolicy = o.ApprovalPolicy.Mode
	}
	if o.Sandbox != nil {
		s.Sandbox = *o.Sandbox
	}
	if o.BaseInstructions != nil {
		s.BaseInstructions = *o.BaseInstructions
	}
	if o.DeveloperInstructions != nil {
		s.DeveloperInstructions = *o.DeveloperInstructions
	}
	return s, nil
}

// setSetting sets *dst to a non-empty *v and notes whether that changed it.
func setSetting[T ~string](dst, v *T, changed *bool) {
	if v != nil && *v != "" && *dst != *v {
		*dst, *changed = *v, true
	}
}

// ApplyTurn applies turn/start's overrides, which stick for the thread's
// next turns, and reports whether they changed s. An error leaves the
// overrides before the offending one applied.
func (s *Settings) ApplyTurn(p protocol.TurnStartParams) (changed bool, err error) {
	if p.Cwd != nil && *p.Cwd != "" && !filepath.IsAbs(*p.Cwd) {
		return false, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: cwd must be an absolute path: %s", *p.Cwd)
	}
	setSetting(&s.Cwd, p.Cwd, &changed)
	setSetting(&s.Model, p.Model, &changed)
	setSetting(&s.Effort, p.Effort, &changed)
	setSetting(&s.Summary, p.Summary, &changed)
	setSetting(&s.ServiceTier, p.ServiceTier, &changed)
	if p.ApprovalPolicy != nil {
		if p.ApprovalPolicy.Granular != nil {
			return changed, protocol.Errorf(protocol.ErrInvalidRequest, "askForApproval.granular requires experimentalApi capability")
		}
		setSetting(&s.ApprovalPolicy, &p.ApprovalPolicy.Mode, &changed)
	}
	if p.SandboxPolicy != nil {
		mode := protocol.SandboxModeFor(*p.SandboxPolicy)
		setSetting(&s.Sandbox, &mode, &changed)
	}
	return changed, nil
}

// Updated is s with thread/settings/update's changes (the running turn
// keeps its own settings).
func (s Settings) Updated(p protocol.ThreadSettingsUpdateParams) (Settings, error) {
	set := func(dst *string, v *string) {
		if v != nil && *v != "" {
			*dst = *v
		}
	}
	set(&s.Cwd, p.Cwd)
	set(&s.Model, p.Model)
	set(&s.Effort, p.Effort)
	if p.ApprovalPolicy != nil {
		if p.ApprovalPolicy.Granular != nil {
			return s, protocol.Errorf(protocol.ErrInvalidRequest, "askForApproval.granular requires experimentalApi capability")
		}
		if p.ApprovalPolicy.Mode != "" {
			s.ApprovalPolicy = p.ApprovalPolicy.Mode
		}
	}
	if p.SandboxPolicy != nil {
		mode := protocol.SandboxModeFor(*p.SandboxPolicy)
		s.Sandbox = mode
	}
	if cm := p.CollaborationMode; cm != nil {
		s.Mode = cm.Mode
		if cm.Mode == protocol.ModeDefault {
			s.Mode = ""
		}
	}
	return s, nil
}

// NoOverrides reports whether o overrides no setting (a resume of a loaded
// thread with it changes nothing).
func NoOverrides(o protocol.ThreadSettings) bool {
	return o.Cwd == nil && o.Model == nil && o.ModelProvider == nil && o.ServiceTier == nil && o.ApprovalPolicy == nil &&
		o.ApprovalsReviewer == nil && o.Sandbox == nil && len(o.Config) == 0 && o.BaseInstructions == nil &&
		o.DeveloperInstructions == nil && o.Personality == nil
}
