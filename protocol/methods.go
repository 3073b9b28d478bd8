package protocol

// Client → server requests.
const (
	MethodInitialize      = "initialize"
	MethodThreadStart     = "thread/start"
	MethodThreadResume    = "thread/resume"
	MethodThreadFork      = "thread/fork"
	MethodThreadList      = "thread/list"
	MethodThreadRead      = "thread/read"
	MethodThreadArchive   = "thread/archive"
	MethodThreadUnarchive = "thread/unarchive"
	MethodThreadNameSet   = "thread/name/set"
	// MethodThreadCompactStart answers {} and runs a compaction turn.
	MethodThreadCompactStart = "thread/compact/start"
	MethodTurnStart          = "turn/start"
	MethodTurnSteer          = "turn/steer"
	MethodTurnInterrupt      = "turn/interrupt"
	MethodModelList          = "model/list"
	MethodCancelRequest      = "$/cancelRequest"
	MethodInitialized        = "initialized" // client notification
)

// Server → client notifications.
const (
	NotifyThreadStarted         = "thread/started"
	NotifyThreadStatusChanged   = "thread/status/changed"
	NotifyThreadArchived        = "thread/archived"
	NotifyThreadUnarchived      = "thread/unarchived"
	NotifyThreadNameUpdated     = "thread/name/updated"
	NotifyThreadTokenUsage      = "thread/tokenUsage/updated"
	NotifyTurnStarted           = "turn/started"
	NotifyTurnCompleted         = "turn/completed"
	NotifyTurnDiffUpdated       = "turn/diff/updated"
	NotifyTurnPlanUpdated       = "turn/plan/updated"
	NotifyItemStarted           = "item/started"
	NotifyItemCompleted         = "item/completed"
	NotifyAgentMessageDelta     = "item/agentMessage/delta"
	NotifyReasoningSummaryDelta = "item/reasoning/summaryTextDelta"
	NotifyReasoningSummaryPart  = "item/reasoning/summaryPartAdded"
	NotifyReasoningTextDelta    = "item/reasoning/textDelta"
	NotifyCommandOutputDelta    = "item/commandExecution/outputDelta"
	NotifyServerRequestResolved = "serverRequest/resolved"
	NotifyError                 = "error"
	NotifyWarning               = "warning"
)

// Server → client requests.
const (
	RequestCommandApproval    = "item/commandExecution/requestApproval"
	RequestFileChangeApproval = "item/fileChange/requestApproval"
	RequestUserInput          = "item/tool/requestUserInput"
)
