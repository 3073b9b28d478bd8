// Types for the subset of the Codex app-server v2 protocol (and apserver's
// Full Auto and Runs extensions) that the extension uses. Field names follow
// protocol/codex/schema and docs/protocol.md. Everything is tolerant:
// unknown fields are ignored and unknown methods are passed through.

export type RequestId = string | number;

export type ApprovalPolicy = "untrusted" | "on-request" | "never";
export type SandboxMode = "read-only" | "workspace-write" | "danger-full-access";

export interface TextElement {
  byteRange: { start: number; end: number };
  placeholder: string | null;
}
export type UserInput =
  | { type: "text"; text: string; text_elements: TextElement[] }
  | { type: "image"; url: string }
  | { type: "localImage"; path: string };

export type ThreadStatus =
  | { type: "notLoaded" }
  | { type: "idle" }
  | { type: "systemError" }
  | { type: "active"; activeFlags: ("waitingOnApproval" | "waitingOnUserInput")[] };

export interface Thread {
  id: string;
  preview: string;
  name: string | null;
  cwd: string;
  model: string | null;
  modelProvider?: string;
  createdAt: number; // seconds
  updatedAt: number; // seconds
  status: ThreadStatus;
  ephemeral?: boolean;
  turns: Turn[];
}

export type TurnStatus = "inProgress" | "completed" | "interrupted" | "failed";

export interface TurnError {
  message: string;
  codexErrorInfo?: unknown;
  additionalDetails?: string | null;
}

export interface Turn {
  id: string;
  items: ThreadItem[];
  status: TurnStatus;
  error: TurnError | null;
  startedAt?: number | null;
  completedAt?: number | null;
  durationMs?: number | null;
}

export type ItemStatus = "inProgress" | "completed" | "failed" | "declined";

export type FileChangeKind =
  | { type: "add" }
  | { type: "delete" }
  | { type: "update"; move_path?: string | null };

export interface FileUpdateChange {
  path: string;
  kind: FileChangeKind;
  diff: string;
}

export type ThreadItem =
  | { type: "userMessage"; id: string; content: UserInput[] }
  | { type: "agentMessage"; id: string; text: string; phase?: string | null }
  | { type: "reasoning"; id: string; summary: string[]; content: string[] }
  | { type: "plan"; id: string; text: string }
  | {
      type: "commandExecution";
      id: string;
      command: string;
      cwd: string;
      status: ItemStatus;
      aggregatedOutput: string | null;
      exitCode: number | null;
      durationMs: number | null;
    }
  | { type: "fileChange"; id: string; changes: FileUpdateChange[]; status: ItemStatus }
  | { type: "contextCompaction"; id: string }
  | { type: string; id: string; [key: string]: unknown };

export interface TokenUsageBreakdown {
  totalTokens: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningOutputTokens: number;
}
export interface ThreadTokenUsage {
  total: TokenUsageBreakdown;
  last: TokenUsageBreakdown;
  modelContextWindow: number | null;
}

export interface PlanStep {
  step: string;
  status: "pending" | "inProgress" | "completed";
}

export type ApprovalDecision = "accept" | "acceptForSession" | "decline" | "cancel";

export interface CommandExecutionRequestApprovalParams {
  threadId: string;
  turnId: string;
  itemId: string;
  startedAtMs?: number;
  reason?: string | null;
  command?: string | null;
  cwd?: string | null;
}
export interface FileChangeRequestApprovalParams {
  threadId: string;
  turnId: string;
  itemId: string;
  startedAtMs?: number;
  reason?: string | null;
  grantRoot?: string | null;
}
export interface UserInputQuestion {
  id: string;
  header?: string;
  question: string;
  isOther?: boolean;
  isSecret?: boolean;
  options?: { label: string; description?: string }[] | null;
}
export interface ToolRequestUserInputParams {
  threadId: string;
  turnId: string;
  itemId: string;
  questions: UserInputQuestion[];
}

// ---- Full Auto (apserver extension; see docs/protocol.md) ----

export type FullAutoState = "running" | "paused" | "waiting" | "stopped";
export type FullAutoApprovals = "never" | "policy" | "ask";
/** Budgets of a run; absent or null = unlimited (runs report null). */
export interface FullAutoBudgets {
  tokens?: number | null;
  turns?: number | null;
  timeMs?: number | null;
  costUsd?: number | null;
}
export interface FullAutoSpent {
  tokens: number;
  turns: number;
  timeMs: number;
  costUsd: number;
}
export interface Receipt {
  id: string;
  threadId: string;
  turnId: string;
  seq: number;
  action: "continue" | "pause" | "stop" | "review";
  reason: string;
  confidence: number;
  stopCondition: string | null;
  rule: string;
  source: "policy" | "model";
  nextInput: string | null;
  executed: boolean;
}
export interface FullAutoRun {
  threadId: string;
  state: FullAutoState;
  reason: string | null;
  objective: string | null;
  approvals: FullAutoApprovals;
  budgets: FullAutoBudgets;
  spent: FullAutoSpent;
  stopCondition: string | null;
  lastDecision: Receipt | null;
}
export interface AttentionItem {
  threadId: string;
  kind: "approval" | "question" | "paused";
  reason: string;
  sinceMs: number;
  /** Set when the item belongs to a run (run/* extension): open the run, not the thread. */
  runId?: string | null;
}
export interface Attention {
  count: number;
  oldestSinceMs: number | null;
  items: AttentionItem[];
}

// ---- Runs (apserver extension; protocol/run.go, docs/protocol.md "Runs") ----

export type RunStatus = "running" | "waiting" | "paused" | "completed" | "failed" | "cancelled";
export type RunStage = "planning" | "planApproval" | "implementation" | "validation" | "merge" | "done";
export type RunWaitingFor = "planApproval" | "taskApproval" | "clarification" | "repair" | "resume" | "taskThread";
export type Trust = "auto" | "manual";
export type Autonomy = "off" | "suggest" | "semi_auto" | "full_auto";
export type MergeMode = "ff" | "squash";
export type TaskStatus = "pending" | "approved" | "running" | "completed" | "failed" | "blocked" | "skipped";
export type TaskRisk = "low" | "medium" | "high";
export type TaskDecision = "approve" | "skip";

export const RUN_STAGES: readonly RunStage[] = ["planning", "planApproval", "implementation", "validation", "merge", "done"];

export interface RunTrust {
  planning: Trust;
  implementation: Trust;
  fixes: Trust;
}
export interface TaskAcceptance {
  criteria: string[];
  checks: string[];
  files: string[];
}
/** A task as the planner or a client writes it (run/plan/update, run/repair/approve). */
export interface PlanTask {
  id: string;
  title: string;
  description: string;
  /** file_create, file_edit, shell_command, research, test, docs, … (open). */
  kind: string;
  dependencies: string[];
  risk: TaskRisk;
  acceptance: TaskAcceptance;
  estimate: string;
}
export interface RunTask extends PlanTask {
  status: TaskStatus;
  retryCount: number;
  threadId: string | null;
  commit: string | null;
  lastFailure: string | null;
  completedAtMs: number | null;
}
export interface RunPlan {
  version: number;
  summary: string;
  tasks: RunTask[];
  approved: boolean;
}
export interface RunClarification {
  id: string;
  stage: RunStage;
  question: string;
  context: string;
  options: string[];
  answer: string | null;
  askedAtMs: number;
  answeredAtMs: number | null;
}
export interface RunRepairProposal {
  taskId: string;
  failure: string;
  proposedTask: PlanTask;
}
export interface RunCounts {
  total: number;
  pending: number;
  approved: number;
  running: number;
  completed: number;
  failed: number;
  blocked: number;
  skipped: number;
}
export interface Run {
  id: string;
  request: string;
  status: RunStatus;
  stage: RunStage;
  waitingFor: RunWaitingFor | null;
  reason: string | null;
  cwd: string;
  baseBranch: string;
  branch: string;
  worktree: string;
  trust: RunTrust;
  autonomy: Autonomy;
  merge: MergeMode;
  models: { planner: string | null; implementer: string | null; validator: string | null };
  maxClarifications: number;
  clarifications: RunClarification[];
  plannerThreadId: string | null;
  currentTaskId: string | null;
  counts: RunCounts;
  plan: RunPlan;
  repairProposal: RunRepairProposal | null;
  mergeCommit: string | null;
  createdAtMs: number;
  updatedAtMs: number;
}
export interface RunStartParams {
  cwd: string;
  request: string;
  baseBranch?: string;
  trust?: Partial<RunTrust>;
  autonomy?: Autonomy;
  merge?: MergeMode;
  models?: { planner?: string; implementer?: string; validator?: string };
  maxClarifications?: number;
}
/** run/updated: every change of status, stage, current task or counts. */
export interface RunUpdatedNotification {
  runId: string;
  status: RunStatus;
  stage: RunStage;
  waitingFor: RunWaitingFor | null;
  reason: string | null;
  currentTaskId: string | null;
  counts: RunCounts;
}

// ---- method maps ----

export interface InitializeResponse {
  userAgent: string;
  codexHome?: string;
  platformFamily?: string;
  platformOs?: string;
}

export interface ThreadSettings {
  cwd?: string;
  model?: string;
  approvalPolicy?: ApprovalPolicy;
  sandbox?: SandboxMode;
}

export interface ThreadStartResponse {
  thread: Thread;
  model?: string;
  cwd?: string;
  approvalPolicy?: unknown;
  sandbox?: unknown;
}

/** Client → server requests: method → [params, result]. */
export interface ClientRequests {
  initialize: {
    params: { clientInfo: { name: string; title?: string | null; version: string }; capabilities?: unknown };
    result: InitializeResponse;
  };
  "thread/start": { params: ThreadSettings & { ephemeral?: boolean }; result: ThreadStartResponse };
  "thread/resume": { params: ThreadSettings & { threadId: string; excludeTurns?: boolean }; result: ThreadStartResponse };
  "thread/list": {
    params: { cursor?: string | null; limit?: number; archived?: boolean; cwd?: string | string[]; sortKey?: string };
    result: { data: Thread[]; nextCursor: string | null };
  };
  "thread/read": { params: { threadId: string; includeTurns?: boolean }; result: { thread: Thread } };
  "thread/archive": { params: { threadId: string }; result: Record<string, never> };
  "thread/revert": {
    params: { threadId: string; beforeTurnId: string; force?: boolean };
    result: { thread: Thread; restoredPaths?: string[] };
  };
  "thread/unarchive": { params: { threadId: string }; result: { thread: Thread } };
  "thread/name/set": { params: { threadId: string; name: string }; result: Record<string, never> };
  "turn/start": {
    params: { threadId: string; input: UserInput[]; approvalPolicy?: ApprovalPolicy; model?: string };
    result: { turn: Turn };
  };
  "turn/steer": { params: { threadId: string; expectedTurnId: string; input: UserInput[] }; result: { turnId: string } };
  "turn/interrupt": { params: { threadId: string; turnId: string }; result: Record<string, never> };
  "thread/compact/start": { params: { threadId: string }; result: Record<string, never> };
  "model/list": { params: { limit?: number }; result: { data: { id: string; model: string; displayName?: string }[] } };
  "fullAuto/start": {
    params: { threadId: string; objective?: string; budgets?: FullAutoBudgets; approvals?: FullAutoApprovals };
    result: { run: FullAutoRun };
  };
  "fullAuto/pause": { params: { threadId: string }; result: { run: FullAutoRun } };
  "fullAuto/resume": { params: { threadId: string }; result: { run: FullAutoRun } };
  "fullAuto/stop": { params: { threadId: string }; result: { run: FullAutoRun } };
  "fullAuto/status": { params: { threadId?: string }; result: { runs: FullAutoRun[]; attention: Attention } };
  "run/start": { params: RunStartParams; result: { run: Run } };
  "run/list": { params: { cwd?: string }; result: { runs: Run[] } };
  "run/read": { params: { runId: string }; result: { run: Run } };
  "run/plan/update": { params: { runId: string; tasks: PlanTask[] }; result: { run: Run } };
  "run/plan/approve": { params: { runId: string }; result: { run: Run } };
  "run/plan/reject": { params: { runId: string; feedback: string }; result: { run: Run } };
  "run/task/approve": { params: { runId: string; taskId: string; decision?: TaskDecision }; result: { run: Run } };
  "run/clarification/answer": { params: { runId: string; clarificationId: string; answer: string }; result: { run: Run } };
  "run/repair/approve": { params: { runId: string; taskId: string; task?: PlanTask }; result: { run: Run } };
  "run/pause": { params: { runId: string }; result: { run: Run } };
  "run/resume": { params: { runId: string }; result: { run: Run } };
  "run/cancel": { params: { runId: string }; result: { run: Run } };
}
export type ClientMethod = keyof ClientRequests;

/** Server → client requests: method → [params, result]. */
export interface ServerRequests {
  "item/commandExecution/requestApproval": {
    params: CommandExecutionRequestApprovalParams;
    result: { decision: ApprovalDecision };
  };
  "item/fileChange/requestApproval": {
    params: FileChangeRequestApprovalParams;
    result: { decision: ApprovalDecision };
  };
  "item/tool/requestUserInput": {
    params: ToolRequestUserInputParams;
    result: { answers: Record<string, { answers: string[] }> };
  };
}
export type ServerRequestMethod = keyof ServerRequests;

export const APPROVAL_METHODS = [
  "item/commandExecution/requestApproval",
  "item/fileChange/requestApproval",
] as const;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}
