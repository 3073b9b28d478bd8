// The view state of the panel and the reducer that folds protocol traffic
// into it. The extension host keeps the authoritative copy (for snapshots,
// the status bar and notifications); each webview applies the same events
// to its own copy. No "vscode" and no DOM imports: it runs in both places.

import type {
  AttentionNotification as Attention,
  FullAutoApprovals,
  FullAutoBudgets,
  FullAutoRun,
  TurnPlanStep as PlanStep,
  FullAutoReceipt as Receipt,
  RequestId,
  Run,
  Thread,
  ThreadItem,
  ThreadStatus,
  ThreadTokenUsage,
  ServerNotificationMethod,
  Turn,
  TurnError,
  TurnStatus,
} from "./protocol";
import type { ApprovalDecision } from "./wire";
import { applyRunNotification, isRunNotification, type RunsSlice } from "./runs";

/** Command output kept per item (the tail), in characters. */
export const OUTPUT_CAP = 200_000;

export type ConnectionState = "stopped" | "starting" | "ready" | "restarting" | "failed" | "untrusted";

export interface ItemView {
  id: string;
  type: string;
  /** The latest full item (item/started, then item/completed). */
  item: ThreadItem;
  /** agentMessage: text so far. plan: text so far. */
  text: string;
  /** commandExecution: output so far. */
  output: string;
  /** reasoning: summary parts and raw content so far. */
  summary: string[];
  content: string[];
  status: string | null;
  done: boolean;
  rev: number;
}

export interface TurnView {
  id: string;
  status: TurnStatus;
  error: TurnError | null;
  /** A retry in progress ("error" with willRetry). */
  retrying: string | null;
  items: ItemView[];
  decisions: Receipt[];
  rev: number;
}

export interface Conversation {
  threadId: string;
  turns: TurnView[];
  activeTurnId: string | null;
  status: ThreadStatus;
  plan: { turnId: string; explanation: string | null; steps: PlanStep[] } | null;
  diff: { turnId: string; diff: string } | null;
  tokenUsage: ThreadTokenUsage | null;
  /** The thread's usage as it stood after each turn (so an undo can roll it back). */
  usageAfterTurn?: Record<string, ThreadTokenUsage>;
  warnings: string[];
  rev: number;
}

export interface ThreadEntry {
  id: string;
  name: string | null;
  preview: string;
  cwd: string;
  createdAt: number;
  updatedAt: number;
  status: ThreadStatus;
}

export interface PendingApproval {
  /** String(requestId): the key the webview answers with. */
  key: string;
  requestId: RequestId;
  method: "item/commandExecution/requestApproval" | "item/fileChange/requestApproval";
  threadId: string;
  turnId: string;
  itemId: string;
  reason: string | null;
  command: string | null;
  cwd: string | null;
  grantRoot: string | null;
  receivedAtMs: number;
}

export interface FullAutoDefaults {
  approvals: FullAutoApprovals;
  budgets: FullAutoBudgets;
}

export interface Notice {
  id: number;
  level: "info" | "warning" | "error";
  text: string;
}

export interface ViewState extends RunsSlice {
  connection: { state: ConnectionState; message: string | null; version: string | null };
  threads: ThreadEntry[];
  activeThreadId: string | null;
  conversations: Record<string, Conversation>;
  approvals: PendingApproval[];
  fullAuto: Record<string, FullAutoRun>;
  /** null: not known yet; false: the server lacks fullAuto/* methods. */
  fullAutoSupported: boolean | null;
  attention: Attention;
  defaults: FullAutoDefaults;
  notices: Notice[];
  rev: number;
}

export type StoreEvent =
  | { kind: "notification"; method: string; params: any }
  | { kind: "approvalRequested"; approval: PendingApproval }
  | { kind: "approvalAnswered"; key: string; decision: ApprovalDecision }
  | { kind: "connection"; state: ConnectionState; message?: string | null; version?: string | null }
  | { kind: "connectionLost" }
  | { kind: "threadList"; threads: Thread[] }
  | { kind: "threadOpened"; thread: Thread }
  | { kind: "activeThread"; threadId: string | null }
  | { kind: "threadRemoved"; threadId: string }
  | { kind: "fullAutoStatus"; runs: FullAutoRun[]; attention: Attention | null }
  | { kind: "fullAutoRun"; run: FullAutoRun }
  | { kind: "fullAutoSupported"; supported: boolean }
  | { kind: "defaults"; defaults: FullAutoDefaults }
  | { kind: "runList"; runs: Run[] }
  | { kind: "run"; run: Run }
  | { kind: "activeRun"; runId: string | null }
  | { kind: "runsSupported"; supported: boolean }
  | { kind: "notice"; level: Notice["level"]; text: string }
  | { kind: "dismissNotice"; id: number };

export function initialState(defaults?: FullAutoDefaults): ViewState {
  return {
    connection: { state: "stopped", message: null, version: null },
    threads: [],
    activeThreadId: null,
    conversations: {},
    approvals: [],
    fullAuto: {},
    fullAutoSupported: null,
    attention: { count: 0, oldestSinceMs: null, items: [] },
    defaults: defaults ?? { approvals: "policy", budgets: { tokens: 200000, turns: 20, timeMs: 30 * 60000 } },
    notices: [],
    runs: {},
    activeRunId: null,
    runsSupported: null,
    rev: 0,
  };
}

function newConversation(threadId: string): Conversation {
  return {
    threadId,
    turns: [],
    activeTurnId: null,
    status: { type: "idle" },
    plan: null,
    diff: null,
    tokenUsage: null,
    warnings: [],
    rev: 0,
  };
}

function entryOf(t: Thread): ThreadEntry {
  return {
    id: t.id,
    name: t.name ?? null,
    preview: t.preview ?? "",
    cwd: t.cwd ?? "",
    createdAt: t.createdAt ?? 0,
    updatedAt: t.updatedAt ?? 0,
    status: t.status ?? { type: "notLoaded" },
  };
}

function itemViewOf(item: ThreadItem, done: boolean, rev: number): ItemView {
  const v: ItemView = {
    id: item.id,
    type: item.type,
    item,
    text: "",
    output: "",
    summary: [],
    content: [],
    status: null,
    done,
    rev,
  };
  syncFromItem(v, item);
  return v;
}

function syncFromItem(v: ItemView, item: ThreadItem): void {
  const it = item as any;
  v.item = item;
  v.type = item.type;
  if (typeof it.status === "string") v.status = it.status;
  switch (item.type) {
    case "agentMessage":
    case "plan":
      if (typeof it.text === "string" && (v.done || it.text.length >= v.text.length)) v.text = it.text;
      break;
    case "commandExecution":
      if (typeof it.aggregatedOutput === "string") v.output = capTail(it.aggregatedOutput);
      break;
    case "reasoning":
      if (Array.isArray(it.summary) && (v.done || it.summary.length >= v.summary.length)) v.summary = [...it.summary];
      if (Array.isArray(it.content) && (v.done || it.content.length >= v.content.length)) v.content = [...it.content];
      break;
  }
}

function capTail(s: string): string {
  return s.length > OUTPUT_CAP ? "…(earlier output dropped)…\n" + s.slice(s.length - OUTPUT_CAP) : s;
}

export function conversationOf(state: ViewState, threadId: string): Conversation {
  let c = state.conversations[threadId];
  if (!c) {
    c = newConversation(threadId);
    state.conversations[threadId] = c;
  }
  return c;
}

function turnOf(state: ViewState, conv: Conversation, turnId: string): TurnView {
  let t = conv.turns.find((x) => x.id === turnId);
  if (!t) {
    t = { id: turnId, status: "inProgress", error: null, retrying: null, items: [], decisions: [], rev: ++state.rev };
    conv.turns.push(t);
  }
  return t;
}

function touch(state: ViewState, conv: Conversation, turn?: TurnView, item?: ItemView): void {
  const r = ++state.rev;
  conv.rev = r;
  if (turn) turn.rev = r;
  if (item) item.rev = r;
}

function findItem(turn: TurnView, itemId: string): ItemView | undefined {
  return turn.items.find((i) => i.id === itemId);
}

/** Locates (or creates, for deltas that beat their item/started) an item. */
function itemFor(state: ViewState, p: any, type: string): { conv: Conversation; turn: TurnView; item: ItemView } | null {
  if (!p || typeof p.threadId !== "string" || typeof p.turnId !== "string" || typeof p.itemId !== "string") return null;
  const conv = conversationOf(state, p.threadId);
  const turn = turnOf(state, conv, p.turnId);
  let item = findItem(turn, p.itemId);
  if (!item) {
    item = itemViewOf({ type, id: p.itemId } as ThreadItem, false, state.rev);
    turn.items.push(item);
  }
  return { conv, turn, item };
}

function upsertThread(state: ViewState, t: Thread): void {
  const e = entryOf(t);
  const i = state.threads.findIndex((x) => x.id === t.id);
  if (i >= 0) state.threads[i] = { ...state.threads[i], ...e };
  else state.threads.unshift(e);
}

function setTurns(state: ViewState, conv: Conversation, turns: Turn[]): void {
  conv.turns = turns.map((t) => ({
    id: t.id,
    status: t.status,
    error: t.error ?? null,
    retrying: null,
    items: (t.items ?? []).map((it) => itemViewOf(it, true, state.rev)),
    decisions: [],
    rev: state.rev,
  }));
  const active = turns.find((t) => t.status === "inProgress");
  conv.activeTurnId = active ? active.id : null;
}

/** Applies one event to the state (in place). Returns false if it changed nothing visible. */
export function applyEvent(state: ViewState, ev: StoreEvent): boolean {
  state.rev++;
  switch (ev.kind) {
    case "notification":
      return applyNotification(state, ev.method, ev.params ?? {});
    case "approvalRequested":
      if (!state.approvals.some((a) => a.key === ev.approval.key)) state.approvals.push(ev.approval);
      return true;
    case "approvalAnswered":
      state.approvals = state.approvals.filter((a) => a.key !== ev.key);
      return true;
    case "connection":
      state.connection = {
        state: ev.state,
        message: ev.message ?? null,
        version: ev.version !== undefined ? ev.version : state.connection.version,
      };
      return true;
    case "connectionLost": {
      // The server is gone: nothing in flight will complete.
      state.approvals = [];
      for (const conv of Object.values(state.conversations)) {
        for (const t of conv.turns) {
          if (t.status === "inProgress") {
            t.status = "interrupted";
            finalizeItems(t, "interrupted", state.rev);
            t.rev = state.rev;
          }
        }
        conv.activeTurnId = null;
        conv.rev = state.rev;
      }
      return true;
    }
    case "threadList": {
      const loaded = new Map(state.threads.map((t) => [t.id, t]));
      state.threads = ev.threads.map((t) => {
        const e = entryOf(t);
        const old = loaded.get(t.id);
        // A thread we have open keeps its live status.
        if (old && state.conversations[t.id] && e.status.type === "notLoaded") e.status = old.status;
        return e;
      });
      return true;
    }
    case "threadOpened": {
      upsertThread(state, ev.thread);
      const conv = conversationOf(state, ev.thread.id);
      if (Array.isArray(ev.thread.turns)) {
        // An undo (thread/revert) drops turns: the usage goes back to what
        // it was after the last turn that remains.
        const keep = new Set(ev.thread.turns.map((t) => t.id));
        const dropped = conv.turns.some((t) => !keep.has(t.id));
        if (ev.thread.turns.length > 0 || dropped) setTurns(state, conv, ev.thread.turns);
        if (dropped && conv.tokenUsage) {
          const after = conv.usageAfterTurn ?? {};
          const last = [...ev.thread.turns].reverse().find((t) => after[t.id]);
          conv.tokenUsage = last ? after[last.id] : null;
          for (const id of Object.keys(after)) if (!keep.has(id)) delete after[id];
          if (conv.diff && !keep.has(conv.diff.turnId)) conv.diff = null;
          if (conv.plan && !keep.has(conv.plan.turnId)) conv.plan = null;
        }
      }
      if (ev.thread.status) conv.status = ev.thread.status;
      conv.rev = state.rev;
      state.activeThreadId = ev.thread.id;
      return true;
    }
    case "activeThread":
      state.activeThreadId = ev.threadId;
      return true;
    case "runList":
      // The listing is the truth for the runs it names; a run that only
      // this client knows (just started) stays.
      for (const r of ev.runs) state.runs[r.id] = r;
      state.runsSupported = true;
      return true;
    case "run":
      state.runs[ev.run.id] = ev.run;
      state.runsSupported = true;
      return true;
    case "activeRun":
      state.activeRunId = ev.runId;
      return true;
    case "runsSupported":
      state.runsSupported = ev.supported;
      return true;
    case "threadRemoved":
      state.threads = state.threads.filter((t) => t.id !== ev.threadId);
      delete state.conversations[ev.threadId];
      if (state.activeThreadId === ev.threadId) state.activeThreadId = null;
      return true;
    case "fullAutoStatus":
      for (const r of ev.runs) state.fullAuto[r.threadId] = r;
      if (ev.attention) state.attention = ev.attention;
      state.fullAutoSupported = true;
      return true;
    case "fullAutoRun":
      state.fullAuto[ev.run.threadId] = ev.run;
      state.fullAutoSupported = true;
      return true;
    case "fullAutoSupported":
      state.fullAutoSupported = ev.supported;
      return true;
    case "defaults":
      state.defaults = ev.defaults;
      return true;
    case "notice": {
      const id = state.rev;
      state.notices.push({ id, level: ev.level, text: ev.text });
      if (state.notices.length > 5) state.notices.shift();
      return true;
    }
    case "dismissNotice":
      state.notices = state.notices.filter((n) => n.id !== ev.id);
      return true;
  }
  return false;
}

/** Marks a finished turn's open items done, with rev so that views render them again (no streaming caret). */
function finalizeItems(t: TurnView, turnStatus: TurnStatus, rev: number): void {
  for (const it of t.items) {
    if (it.done) continue;
    it.done = true;
    it.rev = rev;
    if (it.status === "inProgress") it.status = turnStatus === "completed" ? "completed" : turnStatus;
  }
}

function applyNotification(state: ViewState, method: string, p: any): boolean {
  if (isRunNotification(method)) return applyRunNotification(state, method, p).changed;
  // Typed so that tsc rejects a case that names no notification of the schemas.
  switch (method as ServerNotificationMethod) {
    case "thread/started":
      if (p.thread) upsertThread(state, p.thread);
      return true;
    case "thread/status/changed": {
      const e = state.threads.find((t) => t.id === p.threadId);
      if (e) e.status = p.status;
      const conv = state.conversations[p.threadId];
      if (conv) {
        conv.status = p.status;
        conv.rev = state.rev;
      }
      return true;
    }
    case "thread/archived":
      state.threads = state.threads.filter((t) => t.id !== p.threadId);
      return true;
    case "thread/name/updated": {
      const e = state.threads.find((t) => t.id === p.threadId);
      if (e) e.name = p.threadName ?? null;
      return true;
    }
    case "thread/tokenUsage/updated": {
      const conv = conversationOf(state, p.threadId);
      conv.tokenUsage = p.tokenUsage ?? null;
      if (p.tokenUsage && typeof p.turnId === "string") (conv.usageAfterTurn ??= {})[p.turnId] = p.tokenUsage;
      touch(state, conv);
      return true;
    }
    case "turn/started": {
      if (!p.turn) return false;
      const conv = conversationOf(state, p.threadId);
      const turn = turnOf(state, conv, p.turn.id);
      turn.status = "inProgress";
      conv.activeTurnId = p.turn.id;
      const e = state.threads.find((t) => t.id === p.threadId);
      if (e) e.updatedAt = Math.floor(Date.now() / 1000);
      touch(state, conv, turn);
      return true;
    }
    case "turn/completed": {
      if (!p.turn) return false;
      const conv = conversationOf(state, p.threadId);
      const turn = turnOf(state, conv, p.turn.id);
      turn.status = p.turn.status ?? "completed";
      turn.error = p.turn.error ?? null;
      turn.retrying = null;
      if (conv.activeTurnId === turn.id) conv.activeTurnId = null;
      state.approvals = state.approvals.filter((a) => !(a.threadId === p.threadId && a.turnId === turn.id));
      touch(state, conv, turn);
      finalizeItems(turn, turn.status, turn.rev);
      return true;
    }
    case "item/started":
    case "item/completed": {
      const item = p.item as ThreadItem | undefined;
      if (!item || typeof p.threadId !== "string" || typeof p.turnId !== "string") return false;
      const conv = conversationOf(state, p.threadId);
      const turn = turnOf(state, conv, p.turnId);
      let v = findItem(turn, item.id);
      const done = method === "item/completed";
      if (!v) {
        v = itemViewOf(item, done, state.rev);
        turn.items.push(v);
      } else {
        if (done) v.done = true;
        syncFromItem(v, item);
      }
      touch(state, conv, turn, v);
      return true;
    }
    case "item/agentMessage/delta":
    case "item/plan/delta": {
      const f = itemFor(state, p, method === "item/plan/delta" ? "plan" : "agentMessage");
      if (!f || typeof p.delta !== "string") return false;
      f.item.text += p.delta;
      touch(state, f.conv, f.turn, f.item);
      return true;
    }
    case "item/reasoning/summaryPartAdded": {
      const f = itemFor(state, p, "reasoning");
      if (!f) return false;
      const i = Number(p.summaryIndex ?? f.item.summary.length);
      while (f.item.summary.length <= i) f.item.summary.push("");
      touch(state, f.conv, f.turn, f.item);
      return true;
    }
    case "item/reasoning/summaryTextDelta":
    case "item/reasoning/textDelta": {
      const f = itemFor(state, p, "reasoning");
      if (!f || typeof p.delta !== "string") return false;
      const arr = method === "item/reasoning/textDelta" ? f.item.content : f.item.summary;
      const i = Number((method === "item/reasoning/textDelta" ? p.contentIndex : p.summaryIndex) ?? 0);
      while (arr.length <= i) arr.push("");
      arr[i] += p.delta;
      touch(state, f.conv, f.turn, f.item);
      return true;
    }
    case "item/commandExecution/outputDelta": {
      const f = itemFor(state, p, "commandExecution");
      if (!f || typeof p.delta !== "string") return false;
      f.item.output = capTail(f.item.output + p.delta);
      touch(state, f.conv, f.turn, f.item);
      return true;
    }
    case "item/fileChange/patchUpdated": {
      const f = itemFor(state, p, "fileChange");
      if (!f || !Array.isArray(p.changes)) return false;
      f.item.item = { ...(f.item.item as any), changes: p.changes };
      touch(state, f.conv, f.turn, f.item);
      return true;
    }
    case "turn/plan/updated": {
      const conv = conversationOf(state, p.threadId);
      conv.plan = { turnId: p.turnId, explanation: p.explanation ?? null, steps: Array.isArray(p.plan) ? p.plan : [] };
      touch(state, conv);
      return true;
    }
    case "turn/diff/updated": {
      const conv = conversationOf(state, p.threadId);
      conv.diff = { turnId: p.turnId, diff: typeof p.diff === "string" ? p.diff : "" };
      touch(state, conv);
      return true;
    }
    case "serverRequest/resolved": {
      const key = String(p.requestId);
      state.approvals = state.approvals.filter((a) => a.key !== key);
      return true;
    }
    case "error": {
      if (typeof p.threadId !== "string") return false;
      const conv = conversationOf(state, p.threadId);
      const msg = p.error?.message ?? "error";
      if (typeof p.turnId === "string") {
        const turn = turnOf(state, conv, p.turnId);
        if (p.willRetry) turn.retrying = msg;
        else turn.error = p.error ?? { message: msg };
        touch(state, conv, turn);
      } else {
        conv.warnings.push(msg);
        touch(state, conv);
      }
      return true;
    }
    case "warning": {
      if (typeof p.threadId === "string") {
        const conv = conversationOf(state, p.threadId);
        conv.warnings.push(String(p.message ?? ""));
        if (conv.warnings.length > 20) conv.warnings.shift();
        touch(state, conv);
      }
      return true;
    }
    case "fullAuto/statusChanged": {
      if (typeof p.threadId !== "string") return false;
      const prev = state.fullAuto[p.threadId];
      const run: FullAutoRun = p.run ?? { ...(prev ?? emptyRun(p.threadId)) };
      run.state = p.state ?? run.state;
      if (p.reason !== undefined) run.reason = p.reason;
      state.fullAuto[p.threadId] = run;
      state.fullAutoSupported = true;
      return true;
    }
    case "fullAuto/decision": {
      const r = p.receipt as Receipt | undefined;
      if (!r || typeof p.threadId !== "string") return false;
      const run = state.fullAuto[p.threadId] ?? emptyRun(p.threadId);
      run.lastDecision = r;
      if (r.stopCondition) run.stopCondition = r.stopCondition;
      state.fullAuto[p.threadId] = run;
      const conv = conversationOf(state, p.threadId);
      const turnId = p.turnId ?? r.turnId;
      if (typeof turnId === "string") {
        const turn = turnOf(state, conv, turnId);
        if (!turn.decisions.some((d) => d.id === r.id)) turn.decisions.push(r);
        touch(state, conv, turn);
      }
      state.fullAutoSupported = true;
      return true;
    }
    case "attention":
      state.attention = {
        count: Number(p.count ?? 0),
        oldestSinceMs: p.oldestSinceMs ?? null,
        items: Array.isArray(p.items) ? p.items : [],
      };
      return true;
  }
  return false;
}

function emptyRun(threadId: string): FullAutoRun {
  return {
    threadId,
    state: "stopped",
    reason: null,
    objective: null,
    approvals: "policy",
    budgets: { tokens: null, turns: null, timeMs: null, costUsd: null },
    spent: { tokens: 0, turns: 0, timeMs: 0, costUsd: 0 },
    stopCondition: null,
    lastDecision: null,
  };
}

/** Methods the host forwards to the store (everything else is ignored). */
export function isStoreNotification(method: string): boolean {
  return (
    method.startsWith("thread/") ||
    method.startsWith("turn/") ||
    method.startsWith("item/") ||
    method.startsWith("fullAuto/") ||
    method.startsWith("run/") ||
    method === "serverRequest/resolved" ||
    method === "error" ||
    method === "warning" ||
    method === "attention"
  );
}

/** A one-line label of a thread for lists. */
export function threadLabel(t: ThreadEntry): string {
  const s = (t.name && t.name.trim()) || t.preview.trim() || "New thread";
  return s.length > 80 ? s.slice(0, 79) + "…" : s;
}

/** Finds a file-change item of a thread by id. */
export function findFileChange(
  state: ViewState,
  threadId: string,
  itemId: string,
): { item: ItemView; turn: TurnView } | undefined {
  const conv = state.conversations[threadId];
  if (!conv) return undefined;
  for (let i = conv.turns.length - 1; i >= 0; i--) {
    const turn = conv.turns[i];
    const item = turn.items.find((x) => x.id === itemId);
    if (item) return { item, turn };
  }
  return undefined;
}

/** The message for an approval, one line, for notifications. */
/** The command inside `/bin/bash -c '…'` (what the model asked for), else the command itself. */
export function unwrapShell(cmd: string): string {
  const m = /^\/bin\/(?:ba|z)?sh -l?c '([\s\S]*)'$/.exec(cmd);
  return m ? m[1].replace(/'\\''/g, "'") : cmd;
}

export function approvalSummary(a: PendingApproval, state: ViewState): string {
  if (a.method === "item/commandExecution/requestApproval") {
    return `apserver wants to run: ${a.command ? unwrapShell(a.command) : "(a command)"}${a.reason ? ` — ${a.reason}` : ""}`;
  }
  const f = findFileChange(state, a.threadId, a.itemId);
  const changes = ((f?.item.item as any)?.changes ?? []) as { path: string }[];
  const files = changes.map((c) => c.path).join(", ") || "files";
  return `apserver wants to change ${files}${a.reason ? ` — ${a.reason}` : ""}`;
}
