// The extension host side: owns the apserver client and the authoritative
// view state, answers the panel's messages, and keeps the webviews, the
// status bar and the notification fallback in step.

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { findApserver } from "./binary";
import { callDynamicTool, dynamicToolSpecs, type EditorHost, type Problem } from "./dynamictools";
import { AppServerClient, errorText, METHOD_NOT_FOUND, RequestError, textInput } from "./client";
import { rebuildSides, type Sides } from "./diffs";
import { applyPlanEdit, planTasksOf, runFile, type PlanEdit } from "./runs";
import { lockKey, ServerLock } from "./serverlock";
import type { HostMessage, WebviewMessage } from "./messages";
import type {
  AskForApproval as ApprovalPolicy,
  RunAutonomy as Autonomy,
  ClientRequests,
  Run,
  RunTrust,
  FullAutoApprovals,
  FullAutoBudgets,
  FullAutoRun,
  SandboxMode,
  ToolRequestUserInputParams,
  FileUpdateChange,
} from "./protocol";
import type { ApprovalDecision, ApserverThreadRevert, ThreadSettings } from "./wire";
import {
  applyEvent,
  approvalSummary,
  findFileChange,
  initialState,
  isStoreNotification,
  type FullAutoDefaults,
  type PendingApproval,
  type StoreEvent,
  type ViewState,
} from "./store";

export const DIFF_SCHEME = "apserver-diff";

export const UNTRUSTED_MESSAGE =
  "This folder is not trusted, so apserver does not start here: it runs commands and changes files in the folder. Trust the folder to use it.";

/** Whether the workspace is trusted (true where the API predates trust). */
export function isTrusted(): boolean {
  return (vscode.workspace as { isTrusted?: boolean }).isTrusted !== false;
}

export interface WebviewTarget {
  webview: vscode.Webview;
  isVisible(): boolean;
  ready: boolean;
}

export interface Config {
  path: string;
  model: string;
  approvalPolicy: ApprovalPolicy;
  sandbox: SandboxMode;
  extraArgs: string[];
  env: Record<string, string>;
  trace: boolean;
  notifyWhenHidden: boolean;
  fullAuto: FullAutoDefaults;
}

export function readConfig(): Config {
  const c = vscode.workspace.getConfiguration("apserver");
  const minutes = c.get<number>("fullAuto.maxMinutes", 30);
  const tokens = c.get<number>("fullAuto.maxTokens", 200000);
  const turns = c.get<number>("fullAuto.maxTurns", 20);
  const cost = c.get<number>("fullAuto.maxCostUsd", 0);
  const budgets: FullAutoBudgets = {};
  if (tokens > 0) budgets.tokens = tokens;
  if (turns > 0) budgets.turns = turns;
  if (minutes > 0) budgets.timeMs = Math.round(minutes * 60000);
  if (cost > 0) budgets.costUsd = cost;
  return {
    path: c.get<string>("path", ""),
    model: c.get<string>("model", ""),
    approvalPolicy: c.get<ApprovalPolicy>("approvalPolicy", "on-request"),
    sandbox: c.get<SandboxMode>("sandbox", "workspace-write"),
    extraArgs: c.get<string[]>("extraArgs", []),
    env: c.get<Record<string, string>>("env", {}),
    trace: c.get<boolean>("trace", false),
    notifyWhenHidden: c.get<boolean>("notifyApprovalsWhenHidden", true),
    fullAuto: { approvals: c.get<FullAutoApprovals>("fullAuto.approvals", "policy"), budgets },
  };
}

export class Controller implements vscode.Disposable {
  readonly state: ViewState;
  private client: AppServerClient | undefined;
  private starting: Promise<boolean> | undefined;
  private readonly targets = new Set<WebviewTarget>();
  private queue: StoreEvent[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private readonly approvalResolvers = new Map<string, (d: ApprovalDecision) => void>();
  private readonly sidesCache = new Map<string, Sides>();
  private readonly listeners: (() => void)[] = [];
  /** Every server notification, for the blueprint, manager and dashboard views (project.ts). */
  readonly serverNotifications = new Set<(method: string, params: unknown) => void>();
  /** Called after each (re)connection, for views that read the server's state. */
  readonly connectedListeners = new Set<() => void>();
  private config: Config;
  /** Called after every state change (the status bar listens). */
  onChange: (() => void) | undefined;

  private lock: ServerLock | undefined;

  /**
   * storageDir: where the one-server-per-data-dir lock lives (the
   * extension's global storage, shared by every window); none: no lock.
   */
  constructor(
    private readonly extensionPath: string,
    private readonly out: vscode.OutputChannel,
    private readonly storageDir?: string,
  ) {
    this.config = readConfig();
    this.state = initialState(this.config.fullAuto);
  }

  /** Set once the extension shuts down: the output channel may be gone. */
  private disposed = false;

  /** Shows the output channel, unless it is already gone (shutdown). */
  showLog(): void {
    if (this.disposed) return;
    try {
      this.out.show(true);
    } catch {
      this.disposed = true;
    }
  }

  log(line: string): void {
    // apserver's last stderr lines can arrive after VS Code disposed the
    // channel at shutdown; appending then throws "Channel has been closed".
    if (this.disposed) return;
    try {
      this.out.appendLine(line);
    } catch {
      this.disposed = true;
    }
  }

  // ---------- state and webviews ----------

  dispatch(ev: StoreEvent): void {
    applyEvent(this.state, ev);
    this.queue.push(ev);
    if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), 16);
    this.onChange?.();
  }

  private flush(): void {
    this.flushTimer = undefined;
    const events = this.queue;
    this.queue = [];
    if (events.length === 0) return;
    for (const t of this.targets) if (t.ready) this.post(t, { type: "events", events });
  }

  private post(t: WebviewTarget, msg: HostMessage): void {
    void t.webview.postMessage(msg).then(undefined, () => undefined);
  }

  addTarget(t: WebviewTarget): vscode.Disposable {
    this.targets.add(t);
    return { dispose: () => this.targets.delete(t) };
  }

  panelVisible(): boolean {
    for (const t of this.targets) if (t.isVisible()) return true;
    return false;
  }

  broadcast(msg: HostMessage): boolean {
    let any = false;
    for (const t of this.targets) {
      if (t.ready && t.isVisible()) {
        this.post(t, msg);
        any = true;
      }
    }
    return any;
  }

  async onWebviewMessage(t: WebviewTarget, m: WebviewMessage): Promise<void> {
    try {
      await this.handleWebviewMessage(t, m);
    } catch (e) {
      this.showError(e);
    }
  }

  private async handleWebviewMessage(t: WebviewTarget, m: WebviewMessage): Promise<void> {
    switch (m.type) {
      case "ready":
        // Send pending events first so the snapshot is the newest state.
        this.flush();
        t.ready = true;
        this.post(t, { type: "snapshot", state: this.state });
        void this.ensureStarted();
        return;
      case "newThread":
        await this.newThread();
        return;
      case "openThread":
        await this.openThread(m.threadId);
        if (this.state.activeRunId) this.dispatch({ kind: "activeRun", runId: null });
        return;
      case "archiveThread":
        await this.archiveThread(m.threadId);
        return;
      case "renameThread":
        await this.renameThread(m.threadId);
        return;
      case "refreshThreads":
        await this.refreshThreads();
        return;
      case "send":
        await this.send(m.text);
        return;
      case "composerEmpty":
        await this.promptAndSend();
        return;
      case "interrupt":
        await this.interrupt();
        return;
      case "approval":
        this.answerApproval(m.key, m.decision);
        return;
      case "openDiff":
        await this.openDiff(m.threadId, m.itemId, m.index);
        return;
      case "openTurnDiff":
        await this.openTurnDiff(m.threadId);
        return;
      case "revertTurn":
        await this.revertTurn(m.threadId, m.turnId);
        return;
      case "openLink":
        if (/^(https?:|mailto:)/i.test(m.href)) await vscode.env.openExternal(vscode.Uri.parse(m.href));
        return;
      case "fullAutoStart":
        await this.fullAutoStart({ objective: m.objective, budgets: m.budgets, approvals: m.approvals });
        return;
      case "fullAuto":
        await this.fullAutoAction(m.action);
        return;
      case "dismissNotice":
        this.dispatch({ kind: "dismissNotice", id: m.id });
        return;
      case "restartServer":
        await this.restartServer();
        return;
      case "openDashboard":
        void vscode.commands.executeCommand("apserver.openDashboard");
        return;
      case "showLog":
        this.showLog();
        return;
      case "manageTrust":
        await vscode.commands.executeCommand("workbench.trust.manage");
        return;
      case "runStart":
        await this.startRun(m.request, { trust: m.trust, autonomy: m.autonomy });
        return;
      case "openRun":
        await this.openRun(m.runId);
        return;
      case "closeRun":
        this.dispatch({ kind: "activeRun", runId: null });
        return;
      case "refreshRuns":
        await this.refreshRuns();
        return;
      case "runPlanEdit":
        await this.editPlan(m.runId, m.edit);
        return;
      case "runPlanApprove":
        await this.runRequest("run/plan/approve", { runId: m.runId });
        return;
      case "runPlanReject":
        if (m.feedback.trim() === "") throw new Error("Say what to change in the plan before sending it back.");
        await this.runRequest("run/plan/reject", { runId: m.runId, feedback: m.feedback });
        return;
      case "runTaskDecision":
        await this.runRequest("run/task/approve", { runId: m.runId, taskId: m.taskId, decision: m.decision });
        return;
      case "runClarify":
        if (m.answer.trim() === "") throw new Error("Type or pick an answer first.");
        await this.runRequest("run/clarification/answer", { runId: m.runId, clarificationId: m.clarificationId, answer: m.answer });
        return;
      case "runRepairApprove":
        await this.runRequest("run/repair/approve", { runId: m.runId, taskId: m.taskId });
        return;
      case "runAction":
        await this.runAction(m.runId, m.action);
        return;
      case "openRunFile":
        await this.openRunFile(m.runId, m.file);
        return;
    }
  }

  // ---------- the server ----------

  /** Starts apserver if it isn't running; resolves true once it is ready. */
  ensureStarted(): Promise<boolean> {
    if (this.client && this.client.state === "ready") return Promise.resolve(true);
    if (!isTrusted()) {
      // apserver runs commands and changes files in the folder: not before
      // the user trusts it (the extension declares limited support).
      if (this.state.connection.state !== "untrusted") {
        this.dispatch({ kind: "connection", state: "untrusted", message: UNTRUSTED_MESSAGE });
      }
      return Promise.resolve(false);
    }
    if (this.client && (this.client.state === "restarting" || this.client.state === "starting")) {
      return this.waitReady();
    }
    if (!this.starting) {
      this.starting = this.start().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  /** The user trusted the folder: start if a panel is waiting for the server. */
  trustGranted(): void {
    if (this.state.connection.state !== "untrusted") return;
    this.dispatch({ kind: "connection", state: "stopped", message: null });
    if (this.targets.size > 0) void this.ensureStarted();
  }

  /** Another window started apserver on the same data dir: stop ours. */
  private lostToOtherWindow(): void {
    const c = this.client;
    this.client = undefined;
    this.log("another VS Code window started apserver with the same data dir; stopping this window's");
    this.rejectAllApprovals();
    this.dispatch({ kind: "connectionLost" });
    this.dispatch({
      kind: "connection",
      state: "failed",
      message: "apserver now runs for another VS Code window (one server per data dir). Restart to use it here instead.",
    });
    void c?.stop().catch(() => undefined);
  }

  private waitReady(timeoutMs = 20000): Promise<boolean> {
    return new Promise((resolve) => {
      const client = this.client;
      if (!client) return resolve(false);
      const timer = setTimeout(() => {
        off();
        resolve(false);
      }, timeoutMs);
      const off = client.onStateChange.on((s) => {
        if (s === "ready" || s === "failed" || s === "stopped") {
          clearTimeout(timer);
          off();
          resolve(s === "ready");
        }
      });
    });
  }

  private workspaceCwd(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  private async start(): Promise<boolean> {
    this.config = readConfig();
    this.dispatch({ kind: "connection", state: "starting", message: "looking for apserver" });
    const lookup = await findApserver({ setting: this.config.path, env: process.env, extensionPath: this.extensionPath });
    for (const t of lookup.tried) this.log(`binary lookup: ${t}`);
    if (!lookup.found) {
      const msg =
        "apserver was not found. Set apserver.path, set APSERVER_PATH, install the platform build of this extension, or put apserver on PATH.";
      this.dispatch({ kind: "connection", state: "failed", message: msg });
      void vscode.window.showErrorMessage(msg, "Open Settings", "Show Log").then((pick) => {
        if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "apserver.path");
        if (pick === "Show Log") this.showLog();
      });
      return false;
    }
    const { found } = lookup;
    if (this.config.path && found.source !== "setting") {
      void vscode.window.showWarningMessage(`apserver.path "${this.config.path}" did not answer --version; using ${found.path}.`);
    }
    this.log(`using ${found.path} (${found.source}): ${found.version}`);
    const args = ["serve", "--on-eof", "interrupt", ...(this.config.trace ? ["--trace"] : []), ...this.config.extraArgs];
    this.lock?.release();
    this.lock = this.storageDir
      ? new ServerLock(this.storageDir, lockKey([found.path, this.config.extraArgs, this.config.env]), () => this.lostToOtherWindow())
      : undefined;
    const stuck = await this.lock?.acquire();
    if (stuck) this.log(`another window's apserver (pid ${stuck}) has not stopped yet; starting this one anyway`);
    const client = new AppServerClient({
      command: found.path,
      args,
      env: { ...process.env, ...this.config.env },
      cwd: this.workspaceCwd(),
      clientInfo: { name: "apserver-vscode", title: "apserver for VS Code", version: "0.1.0" },
      // The experimental API, for the editor's own tools (dynamictools.ts).
      capabilities: { experimentalApi: true },
      log: (l) => this.log(l),
    });
    this.client?.stop().catch(() => undefined);
    this.client = client;
    this.wireClient(client, found.version);
    try {
      const info = await client.start();
      this.lock?.setServer(client.pid);
      this.dispatch({ kind: "connection", state: "ready", message: null, version: info.userAgent ?? found.version });
      await this.afterConnect();
      return true;
    } catch (e) {
      const msg = `apserver failed to start: ${errorText(e)}`;
      this.dispatch({ kind: "connection", state: "failed", message: msg });
      void vscode.window.showErrorMessage(msg, "Show Log").then((p) => p && this.showLog());
      return false;
    }
  }

  private wireClient(client: AppServerClient, version: string): void {
    const offs = [
      client.onNotification.on((method, params) => {
        if (isStoreNotification(method)) this.dispatch({ kind: "notification", method, params });
        for (const fn of this.serverNotifications) fn(method, params);
        // Decisions carry no spend: refresh the runs so the meters move.
        if (method === "fullAuto/decision") this.scheduleFullAutoSync();
        // A run this window has not seen (started elsewhere): read it whole.
        const runId = (params as { runId?: unknown } | undefined)?.runId;
        if (method.startsWith("run/") && typeof runId === "string" && !this.state.runs[runId]) void this.readRun(runId);
      }),
      client.onStateChange.on((s, detail) => {
        if (client !== this.client) return;
        if (s === "restarting" || s === "failed") {
          this.rejectAllApprovals();
          this.dispatch({ kind: "connectionLost" });
          this.dispatch({ kind: "connection", state: s, message: detail ?? null });
        }
      }),
      client.onCrash.on((info) => {
        if (client !== this.client) return;
        this.dispatch({ kind: "notice", level: info.willRestart ? "warning" : "error", text: info.message });
        if (info.willRestart) void vscode.window.showWarningMessage(info.message);
        else
          void vscode.window.showErrorMessage(info.message, "Restart", "Show Log").then((p) => {
            if (p === "Restart") void this.restartServer();
            if (p === "Show Log") this.showLog();
          });
      }),
      client.onRestarted.on((info) => {
        if (client !== this.client) return;
        this.lock?.setServer(client.pid);
        this.dispatch({ kind: "connection", state: "ready", message: null, version: info.userAgent ?? version });
        void this.afterConnect(true);
      }),
    ];
    client.handle("item/commandExecution/requestApproval", (params, id) =>
      this.askApproval({
        key: String(id),
        requestId: id,
        method: "item/commandExecution/requestApproval",
        threadId: params.threadId,
        turnId: params.turnId,
        itemId: params.itemId,
        reason: params.reason ?? null,
        command: params.command ?? null,
        cwd: params.cwd ?? null,
        grantRoot: null,
        receivedAtMs: Date.now(),
      }).then((decision) => ({ decision })),
    );
    client.handle("item/fileChange/requestApproval", (params, id) =>
      this.askApproval({
        key: String(id),
        requestId: id,
        method: "item/fileChange/requestApproval",
        threadId: params.threadId,
        turnId: params.turnId,
        itemId: params.itemId,
        reason: params.reason ?? null,
        command: null,
        cwd: null,
        grantRoot: params.grantRoot ?? null,
        receivedAtMs: Date.now(),
      }).then((decision) => ({ decision })),
    );
    client.handle("item/tool/requestUserInput", (params) => this.askQuestions(params));
    client.handle("item/tool/call", (params) => callDynamicTool(vscodeEditorHost(), params));
    this.listeners.push(...offs);
  }

  /** After (re)connecting: list threads, rejoin the open thread, sync Full Auto. */
  private async afterConnect(restarted = false): Promise<void> {
    await this.refreshThreads().catch((e) => this.log(`thread/list: ${errorText(e)}`));
    const tid = this.state.activeThreadId;
    if (restarted && tid) {
      await this.openThread(tid).catch((e) => this.log(`rejoining ${tid}: ${errorText(e)}`));
    }
    await this.syncFullAuto();
    await this.refreshRuns().catch((e) => this.log(`run/list: ${errorText(e)}`));
    for (const fn of this.connectedListeners) fn();
  }

  /** One request to apserver (started first if need be), for the project views. */
  async call<M extends keyof ClientRequests>(method: M, params: ClientRequests[M]["params"]): Promise<ClientRequests[M]["result"]> {
    const client = await this.rpc();
    return (await client.request(method, params as never)) as ClientRequests[M]["result"];
  }

  /** The workspace's directory (the project's cwd), if a folder is open. */
  projectCwd(): string | undefined {
    return this.workspaceCwd();
  }

  async restartServer(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    this.rejectAllApprovals();
    this.dispatch({ kind: "connectionLost" });
    if (old) await old.stop().catch(() => undefined);
    this.dispatch({ kind: "connection", state: "stopped", message: null });
    if (await this.ensureStarted()) {
      const tid = this.state.activeThreadId;
      if (tid) await this.openThread(tid).catch((e) => this.log(`rejoining ${tid}: ${errorText(e)}`));
    }
  }

  private async rpc(): Promise<AppServerClient> {
    if (!(await this.ensureStarted()) || !this.client) {
      throw new Error(this.state.connection.message ?? "apserver is not running");
    }
    return this.client;
  }

  // ---------- approvals and questions ----------

  private askApproval(a: PendingApproval): Promise<ApprovalDecision> {
    return new Promise((resolve) => {
      this.approvalResolvers.set(a.key, resolve);
      this.dispatch({ kind: "approvalRequested", approval: a });
      if (!this.panelVisible() && this.config.notifyWhenHidden) void this.notifyApproval(a);
    });
  }

  /** The notification fallback when no panel is visible. */
  private async notifyApproval(a: PendingApproval): Promise<void> {
    // Three short buttons: a toast cuts longer rows of them ("Appr…"); the
    // rarer answers are one step away under More….
    let pick: string | undefined = await vscode.window.showInformationMessage(approvalSummary(a, this.state), "Approve", "Decline", "More…");
    if (!this.approvalResolvers.has(a.key)) return; // answered elsewhere meanwhile
    if (pick === "More…") {
      const more = await vscode.window.showQuickPick(
        [
          { label: "Approve", description: "this time" },
          { label: "Approve for Session", description: "and the same again in this session" },
          { label: "Decline", description: "the agent goes on without it" },
          { label: "Cancel", description: "decline and end the turn" },
          { label: "Open Panel", description: "decide there" },
        ],
        { title: approvalSummary(a, this.state), ignoreFocusOut: true },
      );
      pick = more?.label;
      if (!this.approvalResolvers.has(a.key)) return;
    }
    const map: Record<string, ApprovalDecision> = {
      Approve: "accept",
      "Approve for Session": "acceptForSession",
      Decline: "decline",
      Cancel: "cancel",
    };
    if (pick && map[pick]) this.answerApproval(a.key, map[pick]);
    else if (pick === "Open Panel") await vscode.commands.executeCommand("apserver.openPanel");
  }

  answerApproval(key: string, decision: ApprovalDecision): void {
    const resolve = this.approvalResolvers.get(key);
    if (!resolve) return;
    this.approvalResolvers.delete(key);
    resolve(decision);
    this.dispatch({ kind: "approvalAnswered", key, decision });
  }

  private rejectAllApprovals(): void {
    // The server that asked is gone; nothing to answer.
    this.approvalResolvers.clear();
  }

  private async askQuestions(p: ToolRequestUserInputParams) {
    const answers: Record<string, { answers: string[] }> = {};
    for (const q of p.questions ?? []) {
      let answer: string | undefined;
      const options = q.options ?? [];
      if (options.length > 0) {
        const items = options.map((o) => ({ label: o.label, description: o.description }));
        if (q.isOther) items.push({ label: "Other…", description: "type an answer" });
        const pick = await vscode.window.showQuickPick(items, { title: q.header ?? "apserver asks", placeHolder: q.question, ignoreFocusOut: true });
        answer = pick?.label;
        if (answer === "Other…") answer = await vscode.window.showInputBox({ prompt: q.question, ignoreFocusOut: true });
      } else {
        answer = await vscode.window.showInputBox({ prompt: q.question, password: !!q.isSecret, ignoreFocusOut: true });
      }
      answers[q.id] = { answers: answer === undefined ? [] : [answer] };
    }
    return { answers };
  }

  // ---------- threads and turns ----------

  private threadSettings(): ThreadSettings {
    const s: ThreadSettings = { approvalPolicy: this.config.approvalPolicy, sandbox: this.config.sandbox };
    const cwd = this.workspaceCwd();
    if (cwd) s.cwd = cwd;
    if (this.config.model) s.model = this.config.model;
    return s;
  }

  async refreshThreads(): Promise<void> {
    const client = await this.rpc();
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const res = await client.request("thread/list", { limit: 50, sortKey: "updated_at", ...(folders.length ? { cwd: folders } : {}) });
    this.dispatch({ kind: "threadList", threads: res.data ?? [] });
  }

  async newThread(): Promise<string> {
    this.config = readConfig();
    const client = await this.rpc();
    const res = await client.request("thread/start", { ...this.threadSettings(), dynamicTools: dynamicToolSpecs });
    this.dispatch({ kind: "threadOpened", thread: res.thread });
    this.broadcast({ type: "focusComposer" });
    return res.thread.id;
  }

  async openThread(threadId: string): Promise<void> {
    const client = await this.rpc();
    const { cwd: _cwd, ...settings } = this.threadSettings();
    const res = await client.request("thread/resume", { threadId, ...settings });
    this.dispatch({ kind: "threadOpened", thread: res.thread });
  }

  async pickThread(): Promise<void> {
    await this.refreshThreads();
    const items = this.state.threads.map((t) => ({
      label: (t.name ?? "").trim() || t.preview.trim() || "New thread",
      description: t.updatedAt ? new Date(t.updatedAt * 1000).toLocaleString() : "",
      detail: t.cwd,
      id: t.id,
    }));
    const pick = await vscode.window.showQuickPick(items, { placeHolder: "Resume an apserver thread" });
    if (pick) await this.openThread(pick.id);
  }

  async archiveThread(threadId?: string): Promise<void> {
    const id = threadId ?? this.state.activeThreadId;
    if (!id) return;
    const client = await this.rpc();
    await client.request("thread/archive", { threadId: id });
    this.dispatch({ kind: "threadRemoved", threadId: id });
  }

  async renameThread(threadId?: string): Promise<void> {
    const id = threadId ?? this.state.activeThreadId;
    if (!id) return;
    const entry = this.state.threads.find((t) => t.id === id);
    const name = await vscode.window.showInputBox({ prompt: "Thread name", value: entry?.name ?? entry?.preview ?? "" });
    if (name === undefined) return;
    const client = await this.rpc();
    await client.request("thread/name/set", { threadId: id, name });
  }

  async send(text: string): Promise<void> {
    if (text.trim() === "") return;
    if (text.trim() === "/compact") return this.compact(); // as in Codex's TUI
    const client = await this.rpc();
    const threadId = this.state.activeThreadId ?? (await this.newThread());
    const conv = this.state.conversations[threadId];
    if (conv?.activeTurnId) {
      await client.request("turn/steer", { threadId, expectedTurnId: conv.activeTurnId, input: textInput(text) });
    } else {
      await client.request("turn/start", { threadId, input: textInput(text) });
    }
  }

  async promptAndSend(): Promise<void> {
    const text = await vscode.window.showInputBox({ prompt: "Message to apserver", ignoreFocusOut: true });
    if (text) await this.send(text);
  }

  /** The "send" command: submit the panel's composer, or ask in an input box. */
  async sendCommand(): Promise<void> {
    if (!this.broadcast({ type: "submitComposer" })) await this.promptAndSend();
  }

  /**
   * Undoes a turn and every later one: apserver restores the files they
   * changed (shell edits too) from its checkpoints and drops the turns. If
   * files changed outside apserver since, it refuses and names them; the
   * user may then undo anyway.
   */
  async revertTurn(threadId: string, turnId: string): Promise<void> {
    const ok = await vscode.window.showWarningMessage(
      "Undo this turn and every later one? apserver restores the files they changed and removes the turns from the thread.",
      { modal: true },
      "Undo",
    );
    if (ok !== "Undo") return;
    const client = await this.rpc();
    let res: ApserverThreadRevert["result"];
    try {
      res = await client.request("thread/revert", { threadId, beforeTurnId: turnId });
    } catch (e) {
      const msg = errorText(e);
      if (!/changed outside apserver/.test(msg)) throw e;
      const force = await vscode.window.showWarningMessage(msg, { modal: true }, "Undo anyway");
      if (force !== "Undo anyway") return;
      const forced: ApserverThreadRevert["params"] = { threadId, beforeTurnId: turnId, force: true };
      res = await client.request("thread/revert", forced);
    }
    await this.openThread(threadId);
    await this.closeStaleDiffs();
    const restored = res.restoredPaths ?? [];
    void vscode.window.showInformationMessage(
      restored.length ? `Undone; restored ${restored.join(", ")}.` : "Undone; no files needed restoring.",
    );
  }

  /**
   * Compacts the active thread's context now (thread/compact/start): the
   * model goes on from a summary of the older turns, which the panel keeps
   * showing. A running turn is replaced by the compaction.
   */
  async compact(): Promise<void> {
    const tid = this.state.activeThreadId;
    if (!tid) {
      void vscode.window.showInformationMessage("apserver: no thread to compact.");
      return;
    }
    const client = await this.rpc();
    await client.request("thread/compact/start", { threadId: tid });
  }

  async interrupt(): Promise<void> {
    const tid = this.state.activeThreadId;
    const turnId = tid ? this.state.conversations[tid]?.activeTurnId : null;
    if (!tid || !turnId) return;
    const client = await this.rpc();
    await client.request("turn/interrupt", { threadId: tid, turnId });
  }

  // ---------- diffs ----------

  private changeFor(threadId: string, itemId: string, index: number): { change: FileUpdateChange; applied: boolean } | undefined {
    const f = findFileChange(this.state, threadId, itemId);
    const changes = ((f?.item.item as any)?.changes ?? []) as FileUpdateChange[];
    const change = changes[index];
    if (!f || !change) return undefined;
    return { change, applied: f.item.status === "completed" };
  }

  private resolvePath(threadId: string, p: string): string {
    if (path.isAbsolute(p)) return p;
    const cwd = this.state.threads.find((t) => t.id === threadId)?.cwd || this.workspaceCwd() || process.cwd();
    return path.join(cwd, p);
  }

  /** Content for apserver-diff: URIs (the TextDocumentContentProvider). */
  diffContent(uri: vscode.Uri): string {
    const q = new URLSearchParams(uri.query);
    const threadId = q.get("thread") ?? "";
    const itemId = q.get("item") ?? "";
    const index = Number(q.get("index") ?? 0);
    const side = q.get("side") === "before" ? "before" : "after";
    const key = `${threadId}\u0000${itemId}\u0000${index}`;
    let sides = this.sidesCache.get(key);
    if (!sides) {
      const found = this.changeFor(threadId, itemId, index);
      if (!found) return `(this change is no longer available)\n`;
      const { change, applied } = found;
      const file = this.resolvePath(threadId, applied && change.kind.type === "update" && change.kind.move_path ? change.kind.move_path : change.path);
      let onDisk: string | undefined;
      try {
        onDisk = fs.readFileSync(file, "utf8");
      } catch {
        onDisk = undefined;
      }
      sides = rebuildSides(change.kind, change.diff ?? "", onDisk, applied);
      this.sidesCache.set(key, sides);
      if (this.sidesCache.size > 200) this.sidesCache.delete(this.sidesCache.keys().next().value as string);
    }
    return side === "before" ? sides.before : sides.after;
  }

  async openDiff(threadId: string, itemId: string, index: number): Promise<void> {
    const found = this.changeFor(threadId, itemId, index);
    if (!found) throw new Error("That file change is no longer available.");
    const { change } = found;
    // Rebuild each time the diff is opened (the file may have changed).
    this.sidesCache.delete(`${threadId}\u0000${itemId}\u0000${index}`);
    const abs = this.resolvePath(threadId, change.path);
    const mk = (side: string) =>
      vscode.Uri.from({
        scheme: DIFF_SCHEME,
        path: abs.split(path.sep).join("/"),
        query: new URLSearchParams({ thread: threadId, item: itemId, index: String(index), side, t: String(Date.now()) }).toString(),
      });
    const name = path.basename(change.path);
    const what = change.kind.type === "add" ? "added" : change.kind.type === "delete" ? "deleted" : "changed";
    await vscode.commands.executeCommand("vscode.diff", mk("before"), mk("after"), `${name} (${what} by apserver)`, {
      preview: true,
    });
  }

  /** Closes the diff tabs of changes the state no longer has (undone turns). */
  async closeStaleDiffs(): Promise<void> {
    const groups = vscode.window.tabGroups?.all ?? [];
    const stale: vscode.Tab[] = [];
    for (const g of groups) {
      for (const tab of g.tabs) {
        const input = tab.input;
        if (!(input instanceof vscode.TabInputTextDiff) || input.modified.scheme !== DIFF_SCHEME) continue;
        const q = new URLSearchParams(input.modified.query);
        if (!this.changeFor(q.get("thread") ?? "", q.get("item") ?? "", Number(q.get("index") ?? 0))) stale.push(tab);
      }
    }
    this.sidesCache.clear();
    if (stale.length) await vscode.window.tabGroups.close(stale);
  }

  async openTurnDiff(threadId: string): Promise<void> {
    const diff = this.state.conversations[threadId]?.diff?.diff;
    if (!diff) return;
    const doc = await vscode.workspace.openTextDocument({ content: diff, language: "diff" });
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  // ---------- Full Auto ----------

  private fullAutoFailed(e: unknown): never {
    if (e instanceof RequestError && e.code === METHOD_NOT_FOUND) {
      this.dispatch({ kind: "fullAutoSupported", supported: false });
      throw new Error("This apserver does not support Full Auto (fullAuto/* methods are missing). Update apserver.");
    }
    throw e;
  }

  private scheduleFullAutoSync(): void {
    if (this.syncTimer) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      void this.syncFullAuto();
    }, 150);
  }

  async syncFullAuto(): Promise<void> {
    const client = this.client;
    if (!client || client.state !== "ready") return;
    try {
      const res = await client.request("fullAuto/status", {});
      this.dispatch({ kind: "fullAutoStatus", runs: res.runs ?? [], attention: res.attention ?? null });
    } catch (e) {
      if (e instanceof RequestError && e.code === METHOD_NOT_FOUND) this.dispatch({ kind: "fullAutoSupported", supported: false });
      else this.log(`fullAuto/status: ${errorText(e)}`);
    }
  }

  async fullAutoStart(opts?: { objective?: string; budgets?: FullAutoBudgets; approvals?: FullAutoApprovals }): Promise<void> {
    const client = await this.rpc();
    const threadId = this.state.activeThreadId ?? (await this.newThread());
    this.config = readConfig();
    const params: { threadId: string; objective?: string; budgets?: FullAutoBudgets; approvals?: FullAutoApprovals } = {
      threadId,
      budgets: opts?.budgets ?? this.config.fullAuto.budgets,
      approvals: opts?.approvals ?? this.config.fullAuto.approvals,
    };
    const objective = opts?.objective?.trim();
    if (objective) params.objective = objective;
    try {
      const res = await client.request("fullAuto/start", params);
      if (res?.run) this.dispatch({ kind: "fullAutoRun", run: res.run });
    } catch (e) {
      this.fullAutoFailed(e);
    }
  }

  async fullAutoAction(action: "pause" | "resume" | "stop"): Promise<void> {
    const threadId = this.state.activeThreadId;
    if (!threadId) return;
    const client = await this.rpc();
    try {
      const res = await client.request(`fullAuto/${action}`, { threadId });
      if (res?.run) this.dispatch({ kind: "fullAutoRun", run: res.run });
    } catch (e) {
      this.fullAutoFailed(e);
    }
  }

  /** The toggle command: stop a live run of the open thread, else start one with the defaults. */
  async toggleFullAuto(): Promise<void> {
    const run = this.activeRun();
    if (run && run.state !== "stopped") await this.fullAutoAction("stop");
    else await this.fullAutoStart();
  }

  activeRun(): FullAutoRun | undefined {
    const tid = this.state.activeThreadId;
    return tid ? this.state.fullAuto[tid] : undefined;
  }

  // ---------- runs ----------

  private runsFailed(e: unknown): never {
    if (e instanceof RequestError && e.code === METHOD_NOT_FOUND) {
      this.dispatch({ kind: "runsSupported", supported: false });
      throw new Error("This apserver does not support runs (run/* methods are missing). Update apserver.");
    }
    throw e;
  }

  /** A run/* request about one run: its answer ({run}) goes into the state. */
  async runRequest<M extends Exclude<keyof ClientRequests & `run/${string}`, "run/list" | "run/start">>(
    method: M,
    params: ClientRequests[M]["params"],
  ): Promise<Run> {
    const client = await this.rpc();
    let res: { run: Run };
    try {
      res = (await client.request(method, params as never)) as { run: Run };
    } catch (e) {
      this.runsFailed(e);
    }
    if (res?.run) this.dispatch({ kind: "run", run: res.run });
    return res.run;
  }

  private readRun(runId: string): Promise<Run | undefined> {
    return this.runRequest("run/read", { runId }).catch((e) => {
      this.log(`run/read ${runId}: ${errorText(e)}`);
      return undefined;
    });
  }

  /** Lists the runs of the workspace's folders (all runs when no folder is open). */
  async refreshRuns(): Promise<void> {
    const client = this.client;
    if (!client || client.state !== "ready") return;
    let res;
    try {
      res = await client.request("run/list", {});
    } catch (e) {
      if (e instanceof RequestError && e.code === METHOD_NOT_FOUND) {
        this.dispatch({ kind: "runsSupported", supported: false });
        return;
      }
      throw e;
    }
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const inWorkspace = (r: Run) =>
      folders.length === 0 || folders.some((f) => r.cwd === f || r.cwd.startsWith(f.endsWith(path.sep) ? f : f + path.sep));
    this.dispatch({ kind: "runList", runs: (res.runs ?? []).filter(inWorkspace) });
  }

  /** Shows a run in the panel (and reads it fresh). */
  async openRun(runId: string): Promise<void> {
    this.dispatch({ kind: "activeRun", runId });
    const run = await this.runRequest("run/read", { runId });
    if (!run) throw new Error(`run ${runId} not found`);
  }

  /** Starts a run on the workspace's repository (or cwd) and shows it. */
  async startRun(request: string, opts: { trust?: Partial<RunTrust>; autonomy?: Autonomy; cwd?: string } = {}): Promise<Run> {
    if (request.trim() === "") throw new Error("Write what the run should do first.");
    const cwd = opts.cwd ?? this.workspaceCwd();
    if (!cwd) throw new Error("Open a folder (a git repository) to start a run in.");
    const client = await this.rpc();
    const params: ClientRequests["run/start"]["params"] = { cwd, request };
    const trust = Object.fromEntries(Object.entries(opts.trust ?? {}).filter(([, v]) => v === "auto" || v === "manual"));
    if (Object.keys(trust).length) params.trust = trust;
    if (opts.autonomy) params.autonomy = opts.autonomy;
    let res;
    try {
      res = await client.request("run/start", params);
    } catch (e) {
      this.runsFailed(e);
    }
    this.dispatch({ kind: "run", run: res.run });
    this.dispatch({ kind: "activeRun", runId: res.run.id });
    return res.run;
  }

  /** One plan edit from the panel, sent as the whole plan (run/plan/update). */
  async editPlan(runId: string, edit: PlanEdit): Promise<Run> {
    const run = this.state.runs[runId];
    if (!run) throw new Error(`run ${runId} is not loaded`);
    if (run.waitingFor !== "planApproval") throw new Error("The plan can only be changed while it waits for approval.");
    const tasks = applyPlanEdit(planTasksOf(run.plan), edit);
    if (tasks.length === 0) throw new Error("A plan needs at least one task (cancel the run to drop it all).");
    return this.runRequest("run/plan/update", { runId, tasks });
  }

  async runAction(runId: string, action: "pause" | "resume" | "cancel"): Promise<void> {
    if (action === "cancel") {
      const ok = await vscode.window.showWarningMessage(
        "Cancel this run? The running task is interrupted; the run's branch and commits are kept.",
        { modal: true },
        "Cancel Run",
      );
      if (ok !== "Cancel Run") return;
    }
    await this.runRequest(`run/${action}`, { runId });
  }

  /**
   * Opens a run's state.md or plan.md: from its worktree while it has one;
   * once the run is over its worktree is removed, and the file is read
   * from the repository's checkout (a merged run's commits carry it) or,
   * failing that, from the run's branch (git show) into a read-only copy.
   */
  async openRunFile(runId: string, file: "state.md" | "plan.md"): Promise<void> {
    const run = this.state.runs[runId];
    if (!run) throw new Error(`run ${runId} is not loaded`);
    const rel = runFile(run.id, file);
    let abs = path.join(run.worktree, ...rel.split("/"));
    if (!fs.existsSync(abs)) {
      const inCheckout = path.join(run.cwd, ...rel.split("/"));
      if (fs.existsSync(inCheckout)) {
        abs = inCheckout;
      } else {
        const text = await gitShow(run.cwd, `${run.branch}:${rel}`);
        if (text === undefined) throw new Error(`${file} of run ${run.id} is not written yet (${abs}).`);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), `apserver-run-${run.id.slice(0, 8)}-`));
        abs = path.join(dir, file);
        fs.writeFileSync(abs, text, { mode: 0o444 });
      }
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(abs));
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  onConfigChanged(e: vscode.ConfigurationChangeEvent): void {
    const before = this.config;
    this.config = readConfig();
    if (e.affectsConfiguration("apserver.fullAuto")) this.dispatch({ kind: "defaults", defaults: this.config.fullAuto });
    const restartKeys = ["apserver.path", "apserver.extraArgs", "apserver.env", "apserver.trace"];
    if (this.client && restartKeys.some((k) => e.affectsConfiguration(k))) {
      void vscode.window.showInformationMessage("Restart apserver to apply the new settings?", "Restart").then((p) => {
        if (p === "Restart") void this.restartServer();
      });
    }
    void before;
  }

  showError(e: unknown): void {
    const msg = errorText(e);
    this.log(`error: ${msg}`);
    this.dispatch({ kind: "notice", level: "error", text: msg });
    void vscode.window.showErrorMessage(msg);
  }

  get clientForTests(): AppServerClient | undefined {
    return this.client;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    clearTimeout(this.flushTimer);
    clearTimeout(this.syncTimer);
    for (const off of this.listeners) off();
    const c = this.client;
    this.client = undefined;
    if (c) await c.stop().catch(() => undefined);
    this.lock?.release();
  }
}

const SEVERITIES: Problem["severity"][] = ["error", "warning", "information", "hint"];

/** The EditorHost of the dynamic tools: VS Code's Problems and editors. */
export function vscodeEditorHost(): EditorHost {
  const toProblems = (uri: vscode.Uri, ds: readonly vscode.Diagnostic[]): Problem[] =>
    ds.map((d) => ({
      path: uri.fsPath,
      line: d.range.start.line,
      character: d.range.start.character,
      severity: SEVERITIES[d.severity] ?? "error",
      message: d.message,
      source: d.source,
    }));
  return {
    problems(path?: string): Problem[] {
      if (path !== undefined) {
        const uri = vscode.Uri.file(path);
        return toProblems(uri, vscode.languages.getDiagnostics(uri));
      }
      return vscode.languages.getDiagnostics().flatMap(([uri, ds]) => toProblems(uri, ds));
    },
    async openFile(path: string, line?: number): Promise<void> {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
      const options: vscode.TextDocumentShowOptions = { preview: false };
      if (line) options.selection = new vscode.Range(line - 1, 0, line - 1, 0);
      await vscode.window.showTextDocument(doc, options);
    },
    root(): string | undefined {
      return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    },
  };
}

/** The content of rev:path in the repository at cwd (git show), or undefined. */
function gitShow(cwd: string, spec: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile("git", ["show", spec], { cwd, maxBuffer: 16 << 20, windowsHide: true }, (err, stdout) => {
      resolve(err ? undefined : stdout);
    });
  });
}
