package protocol

// The manager (docs/manager.md): project settings, the tick, explain and
// status.
const (
	MethodProjectSettingsRead   = "project/settings/read"
	MethodProjectSettingsUpdate = "project/settings/update"
	MethodProjectStatus         = "project/status"
	MethodManagerTick           = "manager/tick"
	MethodManagerExplain        = "manager/explain"
	MethodProjectUpdated        = "project/updated"
)

// ProjectUpdatedNotification: a project's settings or manager state
// changed (project/status has the new state).
type ProjectUpdatedNotification struct {
	Cwd string `json:"cwd"`
}
