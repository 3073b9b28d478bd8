// The typed postMessage protocol between the extension host and the panel.

import type { RunAutonomy as Autonomy, FullAutoApprovals, FullAutoBudgets, RunTrust } from "./protocol";
import type { ApprovalDecision, TaskDecision } from "./wire";
import type { PlanEdit } from "./runs";
import type { StoreEvent, ViewState } from "./store";

/** Extension host → webview. */
export type HostMessage =
  /** The whole state; sent when the webview reports ready (and after a reset). */
  | { type: "snapshot"; state: ViewState }
  /** Events to apply, in order, to the webview's copy of the state. */
  | { type: "events"; events: StoreEvent[] }
  | { type: "focusComposer" }
  /** Send what the composer holds (the "send" command); answered by send or composerEmpty. */
  | { type: "submitComposer" };

/** Webview → extension host. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "newThread" }
  | { type: "openThread"; threadId: string }
  | { type: "archiveThread"; threadId: string }
  | { type: "renameThread"; threadId: string }
  | { type: "refreshThreads" }
  | { type: "send"; text: string }
  | { type: "composerEmpty" }
  | { type: "interrupt" }
  | { type: "approval"; key: string; decision: ApprovalDecision }
  | { type: "openDiff"; threadId: string; itemId: string; index: number }
  | { type: "openTurnDiff"; threadId: string }
  /** Undo a turn and every later one (thread/revert): files restored, turns dropped. */
  | { type: "revertTurn"; threadId: string; turnId: string }
  | { type: "openLink"; href: string }
  | { type: "fullAutoStart"; objective: string; budgets: FullAutoBudgets; approvals: FullAutoApprovals }
  | { type: "fullAuto"; action: "pause" | "resume" | "stop" }
  | { type: "dismissNotice"; id: number }
  | { type: "restartServer" }
  | { type: "showLog" }
  | { type: "openDashboard" }
  /** Open VS Code's workspace trust editor (the folder is not trusted). */
  | { type: "manageTrust" }
  // ---- runs ----
  /** Start a run with this request (absent trust stages and autonomy: the configured ones). */
  | { type: "runStart"; request: string; trust?: Partial<RunTrust>; autonomy?: Autonomy }
  | { type: "openRun"; runId: string }
  /** Back from the run to the thread view. */
  | { type: "closeRun" }
  | { type: "refreshRuns" }
  | { type: "runPlanEdit"; runId: string; edit: PlanEdit }
  | { type: "runPlanApprove"; runId: string }
  | { type: "runPlanReject"; runId: string; feedback: string }
  | { type: "runTaskDecision"; runId: string; taskId: string; decision: TaskDecision }
  | { type: "runClarify"; runId: string; clarificationId: string; answer: string }
  | { type: "runRepairApprove"; runId: string; taskId: string }
  | { type: "runAction"; runId: string; action: "pause" | "resume" | "cancel" }
  | { type: "openRunFile"; runId: string; file: "state.md" | "plan.md" };

const WEBVIEW_TYPES = new Set<WebviewMessage["type"]>([
  "ready",
  "newThread",
  "openThread",
  "archiveThread",
  "renameThread",
  "refreshThreads",
  "send",
  "composerEmpty",
  "interrupt",
  "approval",
  "openDiff",
  "openTurnDiff",
  "revertTurn",
  "openLink",
  "fullAutoStart",
  "fullAuto",
  "dismissNotice",
  "restartServer",
  "showLog",
  "openDashboard",
  "manageTrust",
  "runStart",
  "openRun",
  "closeRun",
  "refreshRuns",
  "runPlanEdit",
  "runPlanApprove",
  "runPlanReject",
  "runTaskDecision",
  "runClarify",
  "runRepairApprove",
  "runAction",
  "openRunFile",
]);

/** Checks that an incoming message has a known type (the webview is not trusted blindly). */
export function isWebviewMessage(m: unknown): m is WebviewMessage {
  return typeof m === "object" && m !== null && WEBVIEW_TYPES.has((m as { type: WebviewMessage["type"] }).type);
}
