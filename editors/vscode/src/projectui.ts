// The project in VS Code: the blueprint explorer (a lazy tree view), the
// manager in the status bar, the project dashboard (a webview under a strict
// CSP) and their commands. Everything goes through the documented protocol
// (blueprint/*, project/*, manager/*) with the Controller's connection.

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  activeBlueprint,
  BlueprintTreeModel,
  byteSlice,
  byteToCharOffset,
  coverageMarkdown,
  coverageWarning,
  diffMarkdown,
  nodeDescription,
  nodeLabel,
  nodeTooltip,
  statusIcon,
  verifySummary,
  type ExplorerNode,
} from "./blueprints";
import type { Controller } from "./controller";
import { makeNonce } from "./html";
import {
  managerPill,
  MODE_DESCRIPTION,
  MODE_LABEL,
  recordStatus,
  renderDashboard,
  risksOf,
  startedRun,
  startedRuns,
  newestSeq,
  type DashboardModel,
  type ManagerMode,
  type ProjectHistory,
} from "./project";
import type { Blueprint, BlueprintNode, BlueprintProgressNotification, ProjectDecision, ProjectSettings, ProjectSettingsUpdateParams, ProjectStatusResponse } from "./protocol";

export const BLUEPRINT_VIEW_ID = "apserver.blueprint";
export const DASHBOARD_VIEW_TYPE = "apserver.dashboard";
const SOURCES_KEY = "apserver.blueprintSources";
const HISTORY_KEY = "apserver.projectHistory";

/** Where the extension keeps small state: the workspace's memento, or memory (tests). */
interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

function memoryMemento(): Memento {
  const m = new Map<string, unknown>();
  return { get: <T>(k: string) => m.get(k) as T | undefined, update: async (k, v) => void m.set(k, v) };
}

/** The project: one status read shared by the status bar, the dashboard and the explorer. */
export class Project implements vscode.Disposable {
  readonly model: BlueprintTreeModel;
  status: ProjectStatusResponse | undefined;
  settings: ProjectSettings | undefined;
  blueprints: Blueprint[] = [];
  error: string | undefined;
  history: ProjectHistory;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  /** blueprint/progress of ingestions in flight, by blueprint id. */
  readonly progress = new Map<string, (p: BlueprintProgressNotification) => void>();
  /** The last blueprint/progress of each version: an ingestion may end before its caller listens. */
  readonly lastProgress = new Map<string, BlueprintProgressNotification>();
  private refreshing: Promise<void> | undefined;
  private again = false;
  private supported = true;
  private readonly subs: { dispose(): void }[] = [];

  constructor(
    readonly ctl: Controller,
    private readonly memento: Memento = memoryMemento(),
  ) {
    this.model = new BlueprintTreeModel((m, p) => ctl.call(m, p));
    this.history = memento.get<ProjectHistory>(HISTORY_KEY) ?? { progress: [], ticks: [] };
    const onNote = (method: string, params: unknown) => this.onNotification(method, params);
    const onConnected = () => void this.refresh();
    ctl.serverNotifications.add(onNote);
    ctl.connectedListeners.add(onConnected);
    this.subs.push({ dispose: () => ctl.serverNotifications.delete(onNote) }, { dispose: () => ctl.connectedListeners.delete(onConnected) });
  }

  get cwd(): string | undefined {
    return this.ctl.projectCwd();
  }

  /** The fired listeners: the blueprint node that changed (tree), or everything. */
  readonly nodeChanged = new vscode.EventEmitter<ExplorerNode | undefined>();

  private onNotification(method: string, params: unknown): void {
    if (method === "project/updated") {
      const cwd = (params as { cwd?: string }).cwd;
      if (!cwd || cwd === this.cwd) void this.refresh();
    } else if (method === "run/completed" || method === "run/started" || method === "run/updated") {
      // A run ended, or waits for its plan's approval: the manager's next
      // step need not wait for the server's heartbeat (15 s, backing off to
      // 5 min, and a project switched on looks again only then): tick now.
      // Ticks are safe to repeat (one at a time per workspace on the server).
      const p = params as { waitingFor?: string | null };
      if (method === "run/completed" || p?.waitingFor === "planApproval") this.scheduleTick();
      this.changed.fire();
    } else if (method === "blueprint/progress") {
      const p = params as BlueprintProgressNotification;
      this.lastProgress.set(p.versionId, p);
      this.progress.get(p.blueprintId)?.(p);
      if (p.status === "ready" && this.model.blueprint?.id === p.blueprintId) void this.refresh(true);
    } else if (method === "blueprint/updated") {
      const p = params as { blueprintId: string; node: BlueprintNode };
      if (p.blueprintId !== this.model.blueprint?.id) return;
      const e = this.model.applyUpdate(p.node);
      if (e) {
        this.nodeChanged.fire(undefined);
      }
    }
  }

  private tickTimer: ReturnType<typeof setTimeout> | undefined;

  /** One manager/tick soon (coalesced), when the manager is on. */
  private scheduleTick(): void {
    const st = this.status;
    const cwd = this.cwd;
    if (!cwd || !st || !(st.mode === "semi_auto" || st.mode === "full_auto") || st.paused || st.phaseDone || this.tickTimer) return;
    this.tickTimer = setTimeout(() => {
      this.tickTimer = undefined;
      void this.ctl
        .call("manager/tick", { cwd })
        .catch(() => undefined)
        .then(() => this.refresh());
    }, 300);
  }

  /** Reads the project's settings, status and blueprints again (one at a time; a call during one runs once after). */
  refresh(resetTree = false): Promise<void> {
    if (resetTree) this.model.reset();
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        await this.readOnce();
      } while (this.again);
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async readOnce(): Promise<void> {
    const cwd = this.cwd;
    if (!cwd || !this.supported) return;
    const prevTick = this.status?.lastTick;
    const prevAt = this.status?.lastTickAtMs ?? 0;
    const prevSeq = newestSeq(this.status);
    const first = this.status === undefined;
    try {
      const [settings, status, list] = await Promise.all([
        this.ctl.call("project/settings/read", { cwd }),
        this.ctl.call("project/status", { cwd }),
        this.ctl.call("blueprint/list", { cwd }),
      ]);
      this.settings = settings.settings;
      this.status = status;
      this.blueprints = list.data;
      this.error = undefined;
      const before = this.model.blueprint;
      this.model.setBlueprint(activeBlueprint(list.data, settings.settings.blueprintId || status.blueprintId));
      if (before?.id !== this.model.blueprint?.id || before?.primary?.id !== this.model.blueprint?.primary?.id) this.nodeChanged.fire(undefined);
      this.history = recordStatus(this.history, status, Date.now());
      void this.memento.update(HISTORY_KEY, this.history);
      if (!first) {
        const toast = (runId: string, reason: string) =>
          void vscode.window.showInformationMessage(`The manager started a run: ${reason || runId}`, "Open Run").then((pick) => {
            if (pick === "Open Run") void vscode.commands.executeCommand("apserver.openRun", runId);
          });
        const started = startedRuns(status, prevSeq);
        if (started.length) for (const r of started) toast(r.runId, r.reason);
        else if (!status.recent?.some((r) => r.runId)) {
          const run = startedRun(prevTick, prevAt, status); // a server without runId in recent
          if (run) toast(run, status.lastTick?.reason ?? "");
        }
      }
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (/method not found|-32601/i.test(msg)) this.supported = false;
      this.error = msg;
    }
    this.changed.fire();
  }

  // ---------- sources: the file each blueprint came from ----------

  sourceOf(blueprintId: string): string | undefined {
    return (this.memento.get<Record<string, string>>(SOURCES_KEY) ?? {})[blueprintId];
  }

  async setSource(blueprintId: string, file: string): Promise<void> {
    const all = { ...(this.memento.get<Record<string, string>>(SOURCES_KEY) ?? {}), [blueprintId]: file };
    await this.memento.update(SOURCES_KEY, all);
  }

  /** The bytes of the blueprint's document (the file it was ingested from), if it is known and still there. */
  sourceBytes(blueprintId: string): Uint8Array | undefined {
    const f = this.sourceOf(blueprintId);
    if (!f) return undefined;
    try {
      // Every tree item's hover reads it: read once per change of the file.
      const mtimeMs = fs.statSync(f).mtimeMs;
      const c = this.sourceCache;
      if (c && c.file === f && c.mtimeMs === mtimeMs) return c.bytes;
      const bytes = fs.readFileSync(f);
      this.sourceCache = { file: f, mtimeMs, bytes };
      return bytes;
    } catch {
      return undefined;
    }
  }

  private sourceCache: { file: string; mtimeMs: number; bytes: Uint8Array } | undefined;

  async updateSettings(p: Partial<Omit<ProjectSettingsUpdateParams, "cwd">>): Promise<void> {
    const cwd = this.cwd;
    if (!cwd) throw new Error("Open a folder (the project) first.");
    await this.ctl.call("project/settings/update", { cwd, ...p });
    await this.refresh();
  }

  dispose(): void {
    if (this.tickTimer) clearTimeout(this.tickTimer);
    for (const s of this.subs) s.dispose();
    this.changed.dispose();
    this.nodeChanged.dispose();
  }
}

// ---------- the blueprint explorer ----------

/** The tree's first row when the blueprint leaves part of its document out: a warning that opens the coverage. */
interface CoverageItem {
  coverage: string;
}
type BlueprintItem = ExplorerNode | CoverageItem;
const isCoverage = (i: BlueprintItem): i is CoverageItem => (i as CoverageItem).coverage !== undefined;

export class BlueprintViewProvider implements vscode.TreeDataProvider<BlueprintItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<BlueprintItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly sub: vscode.Disposable;
  /** The coverage warning of a version (one blueprint/coverage per version shown). */
  private coverage: { versionId: string; warning: string | undefined } | undefined;

  constructor(private readonly project: Project) {
    this.sub = project.nodeChanged.event((e) => this.changed.fire(e));
  }

  refresh(e?: ExplorerNode): void {
    this.changed.fire(e);
  }

  private async coverageItem(): Promise<CoverageItem[]> {
    const bp = this.project.model.blueprint;
    if (!bp?.primary || bp.primary.status !== "ready") return [];
    if (this.coverage?.versionId !== bp.primary.id) {
      try {
        const c = await this.project.ctl.call("blueprint/coverage", { blueprintId: bp.id });
        this.coverage = { versionId: bp.primary.id, warning: coverageWarning(c) };
      } catch {
        return [];
      }
    }
    return this.coverage.warning ? [{ coverage: this.coverage.warning }] : [];
  }

  async getChildren(node?: BlueprintItem): Promise<BlueprintItem[]> {
    if (node && isCoverage(node)) return [];
    if (!node && !this.project.model.blueprint) {
      await this.project.refresh();
    }
    try {
      const kids = await this.project.model.children(node);
      return node ? kids : [...(await this.coverageItem()), ...kids];
    } catch (e) {
      this.project.ctl.showError(e);
      return [];
    }
  }

  getParent(node: BlueprintItem): ExplorerNode | undefined {
    if (isCoverage(node)) return undefined;
    return node.node.parentId ? this.project.model.find(node.node.parentId) : undefined;
  }

  getTreeItem(e: BlueprintItem): vscode.TreeItem {
    if (isCoverage(e)) {
      const item = new vscode.TreeItem("Coverage", vscode.TreeItemCollapsibleState.None);
      item.id = "bp:coverage";
      item.description = e.coverage;
      item.tooltip = "Parts of the document no node covers. Click for the gaps (also in the Problems view).";
      item.iconPath = new vscode.ThemeIcon("warning", new vscode.ThemeColor("problemsWarningIcon.foreground"));
      item.command = { command: "apserver.showCoverage", title: "Show Coverage" };
      return item;
    }
    const item = new vscode.TreeItem(
      nodeLabel(e.node),
      e.hasChildren ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `bp:${e.node.id}`;
    item.description = nodeDescription(e);
    item.iconPath = new vscode.ThemeIcon(statusIcon(e.node.status));
    item.contextValue = e.task ? "bpTask" : `bpNode.${e.node.kind}`;
    const bp = this.project.model.blueprint;
    const bytes = bp ? this.project.sourceBytes(bp.id) : undefined;
    const excerpt = bytes ? byteSlice(bytes, e.node.start, e.node.sectionEnd) : undefined;
    item.tooltip = new vscode.MarkdownString(nodeTooltip(e, excerpt));
    item.command = { command: "apserver.blueprint.goToSource", title: "Go to Source", arguments: [e] };
    return item;
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}

/** The coverage gaps of the active blueprint as warnings in the Problems view (on its source file). */
export async function showCoverage(project: Project, diagnostics: vscode.DiagnosticCollection): Promise<string> {
  const bp = project.model.blueprint;
  if (!bp) throw new Error("No active blueprint: ingest one first.");
  const c = await project.ctl.call("blueprint/coverage", { blueprintId: bp.id });
  const bytes = project.sourceBytes(bp.id);
  const md = coverageMarkdown(bp.title, c, bytes ? (s, e) => byteSlice(bytes, s, e) : undefined);
  const src = project.sourceOf(bp.id);
  if (src && bytes) {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(src));
    const at = (b: number) => doc.positionAt(byteToCharOffset(bytes, b));
    const diags = [
      ...c.gaps.map((g) => {
        const d = new vscode.Diagnostic(new vscode.Range(at(g.start), at(g.end)), "Not covered by any blueprint node", vscode.DiagnosticSeverity.Warning);
        d.source = "apserver blueprint";
        return d;
      }),
      ...c.uncovered.map((u) => {
        const d = new vscode.Diagnostic(new vscode.Range(at(u.start), at(u.end)), `Normative sentence not mapped to a node: ${u.text}`, vscode.DiagnosticSeverity.Warning);
        d.source = "apserver blueprint";
        return d;
      }),
    ];
    diagnostics.set(doc.uri, diags);
  }
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: md });
  await vscode.window.showTextDocument(doc, { preview: true });
  return md;
}

// ---------- the manager in the status bar ----------

export class ManagerStatus implements vscode.Disposable {
  /** Created when the workspace is a project (a blueprint, or a mode other than off): others see no manager. */
  item: vscode.StatusBarItem | undefined;
  private readonly sub: vscode.Disposable;

  constructor(private readonly project: Project) {
    this.sub = project.onDidChange(() => this.update());
  }

  update(): void {
    const p = this.project;
    const st = p.status;
    const relevant = !!p.error || (!!st && (st.mode !== "off" || !!st.blueprintId || p.blueprints.length > 0));
    if (!relevant) {
      this.item?.hide();
      return;
    }
    if (!this.item) {
      this.item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 49);
      this.item.name = "apserver Manager";
      this.item.command = "apserver.manager.menu";
    }
    const pill = managerPill(st, Object.values(p.ctl.state.runs), p.error);
    this.item.text = pill.text;
    this.item.tooltip = pill.tooltip;
    this.item.backgroundColor = pill.attention ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.show();
  }

  dispose(): void {
    this.sub.dispose();
    this.item?.dispose();
  }
}

const MODES: ManagerMode[] = ["off", "suggest", "semi_auto", "full_auto"];

/** The manager's menu: mode, pause/resume, phase, dashboard. */
export async function managerMenu(project: Project): Promise<void> {
  const st = project.status;
  const items: (vscode.QuickPickItem & { run: () => Thenable<unknown> })[] = [
    { label: "$(settings-gear) Mode…", description: st ? MODE_LABEL[st.mode] : "", run: () => chooseMode(project) },
    st?.paused
      ? { label: "$(debug-continue) Resume", run: () => project.updateSettings({ paused: false }) }
      : { label: "$(debug-pause) Pause", run: () => project.updateSettings({ paused: true }) },
    { label: "$(list-tree) Phase…", description: st?.phase ?? "", run: () => choosePhase(project) },
    { label: "$(dashboard) Open Project Dashboard", run: () => vscode.commands.executeCommand("apserver.openDashboard") },
  ];
  const pick = await vscode.window.showQuickPick(items, { title: "apserver manager" });
  if (pick) await pick.run();
}

export async function chooseMode(project: Project): Promise<void> {
  const pick = await vscode.window.showQuickPick(
    MODES.map((m) => ({ label: MODE_LABEL[m], description: MODE_DESCRIPTION[m], mode: m, picked: project.status?.mode === m })),
    { title: "The manager's mode" },
  );
  if (!pick) return;
  const bp = project.model.blueprint;
  await project.updateSettings({ mode: pick.mode, ...(bp && !project.settings?.blueprintId ? { blueprintId: bp.id } : {}) });
}

export async function choosePhase(project: Project, phase?: string): Promise<void> {
  const bp = project.model.blueprint;
  if (!bp) throw new Error("No active blueprint: ingest one first.");
  if (phase === undefined) {
    const roots = await project.model.children();
    const pick = await vscode.window.showQuickPick(
      [{ label: "The first unfinished phase", id: "" }, ...roots.map((r) => ({ label: r.node.title, description: r.node.status.replace("_", " "), id: r.node.id }))],
      { title: "The manager's phase" },
    );
    if (!pick) return;
    phase = pick.id;
  }
  await project.updateSettings({ blueprintId: bp.id, phase });
}

// ---------- the dashboard ----------

export function dashboardCsp(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

const DASHBOARD_CSS = `
body{font-family:var(--vscode-font-family);color:var(--vscode-foreground);padding:0 12px}
.box{border:1px solid var(--vscode-panel-border,#8884);border-radius:4px;padding:6px 10px;margin:8px 0}
h2{font-size:1.05em;margin:4px 0}h3{font-size:.95em;margin:6px 0 2px}
.muted{opacity:.7}.badge{border-radius:8px;padding:0 6px;background:var(--vscode-badge-background);color:var(--vscode-badge-foreground)}
.counts{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:10px}.count .n{font-weight:bold;font-size:1.2em}
.chart .line{fill:none;stroke:var(--vscode-charts-green,#3c3);stroke-width:2}.chart .axis{stroke:var(--vscode-panel-border,#8886)}
button{background:var(--vscode-button-background);color:var(--vscode-button-foreground);border:none;padding:2px 8px;cursor:pointer}
button.secondary{background:var(--vscode-button-secondaryBackground);color:var(--vscode-button-secondaryForeground)}
.error{color:var(--vscode-errorForeground)}a{color:var(--vscode-textLink-foreground)}
#root{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:0 12px}
`;

/** The dashboard page: the body is rendered on the extension side and replaced on each update. */
export function renderDashboardHtml(cspSource: string, nonce: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${dashboardCsp(cspSource, nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${DASHBOARD_CSS}</style>
<title>apserver project</title></head>
<body><h1>Project</h1><div id="root">${body}</div>
<script nonce="${nonce}">
(function(){
  const vscode = acquireVsCodeApi();
  const root = document.getElementById("root");
  window.addEventListener("message", (e) => { if (e.data && e.data.type === "render") root.innerHTML = e.data.html; });
  document.addEventListener("click", (e) => {
    const el = e.target.closest("[data-action]");
    if (!el) return;
    e.preventDefault();
    vscode.postMessage({ type: "action", action: el.dataset.action, id: el.dataset.id || null });
  });
  vscode.postMessage({ type: "ready" });
})();
</script></body></html>`;
}

export class Dashboard implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private decisions: ProjectDecision[] = [];
  private explain: DashboardModel["explain"];
  private readonly sub: vscode.Disposable;
  /** The last body posted (tests read it). */
  lastBody = "";

  private updateTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly project: Project) {
    // Runs change often while they work: one render (and its two reads) per burst.
    this.sub = project.onDidChange(() => {
      if (!this.panel || this.updateTimer) return;
      this.updateTimer = setTimeout(() => {
        this.updateTimer = undefined;
        void this.update();
      }, 150);
    });
  }

  open(): vscode.WebviewPanel {
    if (this.panel) {
      this.panel.reveal();
      return this.panel;
    }
    const panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW_TYPE, "apserver Project", vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [],
      retainContextWhenHidden: true,
    });
    this.panel = panel;
    panel.webview.html = renderDashboardHtml(panel.webview.cspSource, makeNonce(), renderDashboard(this.model()));
    panel.webview.onDidReceiveMessage((m: unknown) => void this.onMessage(m));
    panel.onDidDispose(() => {
      if (this.panel === panel) this.panel = undefined;
    });
    void this.project.refresh();
    return panel;
  }

  private model(): DashboardModel {
    const p = this.project;
    const runs = Object.values(p.ctl.state.runs).sort((a, b) => (b.createdAtMs ?? 0) - (a.createdAtMs ?? 0));
    const bp = p.model.blueprint;
    const phase = p.status?.phase;
    const phaseTitle = phase ? p.model.roots?.find((r) => r.node.id === phase)?.node.title : undefined;
    return {
      cwd: p.cwd ?? "",
      status: p.status,
      settings: p.settings,
      explain: this.explain,
      blueprintTitle: bp?.title,
      phaseTitle,
      decisions: this.decisions,
      runs,
      history: p.history,
      risks: risksOf(p.status, this.decisions, runs),
      error: p.error,
    };
  }

  /** Reads decisions and the manager's explanation, then renders. */
  async update(): Promise<void> {
    if (!this.panel) return;
    const cwd = this.project.cwd;
    if (cwd) {
      const [d, x] = await Promise.allSettled([
        this.project.ctl.call("project/decision/list", { cwd }),
        this.project.ctl.call("manager/explain", { cwd }),
      ]);
      if (d.status === "fulfilled") this.decisions = d.value.decisions;
      if (x.status === "fulfilled") this.explain = x.value;
    }
    this.lastBody = renderDashboard(this.model());
    void this.panel?.webview.postMessage({ type: "render", html: this.lastBody });
  }

  private async onMessage(m: unknown): Promise<void> {
    const msg = m as { type?: string; action?: string; id?: string | null };
    if (msg?.type === "ready") return void this.update();
    if (msg?.type !== "action" || typeof msg.action !== "string") return;
    try {
      await this.act(msg.action, typeof msg.id === "string" ? msg.id : undefined);
    } catch (e) {
      this.project.ctl.showError(e);
    }
  }

  async act(action: string, id?: string): Promise<void> {
    const p = this.project;
    const cwd = p.cwd;
    switch (action) {
      case "openRun":
        if (id) await vscode.commands.executeCommand("apserver.openRun", id);
        return;
      case "ingest":
        await vscode.commands.executeCommand("apserver.ingestBlueprint");
        return;
      case "chooseMode":
        return chooseMode(p);
      case "choosePhase":
        return choosePhase(p);
      case "pause":
        return p.updateSettings({ paused: true });
      case "resume":
        return p.updateSettings({ paused: false });
      case "tick":
        if (cwd) await p.ctl.call("manager/tick", { cwd });
        return p.refresh();
      case "addDecision":
        await addDecision(p);
        return this.update();
      case "editDecision":
        if (id) await editDecision(p, this.decisions.find((d) => d.id === id));
        return this.update();
      case "confirmDecision":
        if (id) await p.ctl.call("project/decision/update", { id, status: "active" });
        return this.update();
      case "revokeDecision": {
        if (!id) return;
        const reason = await vscode.window.showInputBox({ title: "Revoke the decision", prompt: "Why? (optional)" });
        if (reason === undefined) return;
        await p.ctl.call("project/decision/revoke", { id, ...(reason ? { reason } : {}) });
        return this.update();
      }
    }
  }

  dispose(): void {
    if (this.updateTimer) clearTimeout(this.updateTimer);
    this.sub.dispose();
    this.panel?.dispose();
  }
}

export async function addDecision(project: Project, supersedes?: string): Promise<ProjectDecision | undefined> {
  const cwd = project.cwd;
  if (!cwd) throw new Error("Open a folder (the project) first.");
  const title = await vscode.window.showInputBox({ title: "A decision", prompt: "Its title, e.g. “Use PostgreSQL”", ignoreFocusOut: true });
  if (!title?.trim()) return undefined;
  const text = await vscode.window.showInputBox({ title: `Decision: ${title}`, prompt: "What was decided (optional)", ignoreFocusOut: true });
  if (text === undefined) return undefined;
  const res = await project.ctl.call("project/decision/add", { cwd, title: title.trim(), ...(text ? { text } : {}), ...(supersedes ? { supersedes } : {}) });
  await project.refresh();
  return res.decision;
}

export async function editDecision(project: Project, d: ProjectDecision | undefined): Promise<void> {
  if (!d) return;
  const title = await vscode.window.showInputBox({ title: "Edit the decision", value: d.title, ignoreFocusOut: true });
  if (title === undefined || !title.trim()) return;
  const text = await vscode.window.showInputBox({ title: `Decision: ${title}`, value: d.text, ignoreFocusOut: true });
  if (text === undefined) return;
  await project.ctl.call("project/decision/update", { id: d.id, title: title.trim(), text });
}

// ---------- blueprint commands ----------

/** Ingest Blueprint: a file picker, then blueprint/ingest with a progress notification (chunks done/total, cancel). */
export async function ingestBlueprint(project: Project, file?: string): Promise<Blueprint | undefined> {
  const cwd = project.cwd;
  if (!cwd) throw new Error("Open a folder (the project) first.");
  if (!file) {
    const picked = await vscode.window.showOpenDialog({
      title: "Ingest a blueprint (a Markdown or text specification)",
      canSelectMany: false,
      filters: { Specifications: ["md", "markdown", "txt"], "All files": ["*"] },
      defaultUri: vscode.Uri.file(cwd),
    });
    if (!picked?.length) return undefined;
    file = picked[0].fsPath;
  }
  const abs = path.resolve(cwd, file);
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Ingesting ${path.basename(abs)}`, cancellable: true },
    async (progress, token) => {
      const res = await project.ctl.call("blueprint/ingest", { cwd, path: abs });
      const id = res.blueprint.id;
      let last = 0;
      const done = new Promise<BlueprintProgressNotification>((resolve) => {
        const report = (p: BlueprintProgressNotification) => {
          if (p.versionId !== res.version.id) return;
          const pct = p.chunksTotal ? (p.chunksDone / p.chunksTotal) * 100 : 0;
          progress.report({ message: `${p.chunksDone}/${p.chunksTotal} chunks, ${p.nodes} nodes`, increment: Math.max(0, pct - last) });
          last = pct;
          if (p.status !== "ingesting") resolve(p);
        };
        project.progress.set(id, report);
        // What came before this listener (notifications arrive while blueprint/ingest's answer is read).
        const seen = project.lastProgress.get(res.version.id);
        if (seen) report(seen);
        if (res.version.status !== "ingesting") resolve({ ...res.version, blueprintId: id, versionId: res.version.id });
        token.onCancellationRequested(() => {
          void project.ctl.call("blueprint/cancel", { blueprintId: id }).catch(() => undefined);
        });
      });
      const end = await done.finally(() => project.progress.delete(id));
      await project.setSource(id, abs);
      if (end.status === "failed") throw new Error(`Ingestion failed: ${end.error ?? "unknown error"}`);
      if (end.status === "cancelled") {
        void vscode.window.showWarningMessage(`Ingestion of ${path.basename(abs)} cancelled.`);
        return undefined;
      }
      await project.refresh(true);
      void vscode.window.showInformationMessage(`Blueprint "${res.blueprint.title}" ready: ${end.nodes} nodes.`);
      return res.blueprint;
    },
  );
}

/** The node a command got: an explorer node, else a pick among the loaded ones. */
export async function nodeArg(project: Project, arg: unknown, title: string): Promise<ExplorerNode | undefined> {
  const e = arg as ExplorerNode | undefined;
  if (e && typeof e === "object" && e.node?.id) return e;
  if (typeof arg === "string") return project.model.find(arg);
  const roots = await project.model.children();
  const pick = await vscode.window.showQuickPick(
    roots.map((r) => ({ label: r.node.title, description: r.node.kind, e: r })),
    { title },
  );
  return pick?.e;
}

export async function goToSource(project: Project, e: ExplorerNode | undefined): Promise<void> {
  const bp = project.model.blueprint;
  if (!bp || !e) return;
  let src = project.sourceOf(bp.id);
  if (!src || !fs.existsSync(src)) {
    const picked = await vscode.window.showOpenDialog({ title: `Where is the document of "${bp.title}"?`, canSelectMany: false });
    if (!picked?.length) return;
    src = picked[0].fsPath;
    await project.setSource(bp.id, src);
  }
  const bytes = fs.readFileSync(src);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(src));
  const start = doc.positionAt(byteToCharOffset(bytes, e.node.start));
  const end = doc.positionAt(byteToCharOffset(bytes, e.node.sectionEnd));
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(start, end), preview: true });
}

export async function generateTasks(project: Project, view: BlueprintViewProvider, e: ExplorerNode | undefined): Promise<ExplorerNode | undefined> {
  const bp = project.model.blueprint;
  if (!bp || !e || e.task) return undefined;
  const res = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Generating the tasks of "${e.node.title}"` },
    () => project.ctl.call("blueprint/node/tasks", { blueprintId: bp.id, nodeId: e.node.id }),
  );
  const shown = project.model.setTasks(e.node.id, res.tasks);
  view.refresh(shown);
  void vscode.window.showInformationMessage(`${res.tasks.length} task(s) for "${e.node.title}".`);
  return shown;
}

export async function startBuilding(project: Project, e: ExplorerNode | undefined): Promise<void> {
  const bp = project.model.blueprint;
  if (!bp || !e) return;
  if (e.node.kind === "phase" && !e.node.parentId) {
    // A phase: the manager builds it, in the mode the user picks.
    const pick = await vscode.window.showQuickPick(
      (["semi_auto", "full_auto", "suggest"] as ManagerMode[]).map((m) => ({ label: MODE_LABEL[m], description: MODE_DESCRIPTION[m], mode: m })),
      { title: `Build "${e.node.title}" with the manager` },
    );
    if (!pick) return;
    await project.updateSettings({ blueprintId: bp.id, phase: e.node.id, mode: pick.mode, paused: false });
    const cwd = project.cwd!;
    const tick = await project.ctl.call("manager/tick", { cwd });
    await project.refresh();
    void vscode.window.showInformationMessage(`The manager builds "${e.node.title}": ${tick.result} — ${tick.reason}`);
    return;
  }
  // A node or task: one run from it.
  const run = await project.ctl.call("run/start", {
    cwd: project.cwd,
    blueprint: e.task ? { blueprintId: bp.id, taskIds: [e.node.id] } : { blueprintId: bp.id, nodeId: e.node.id },
  });
  await vscode.commands.executeCommand("apserver.openRun", run.run.id);
}

export async function verifyNode(project: Project, e: ExplorerNode | undefined): Promise<void> {
  const bp = project.model.blueprint;
  if (!bp || !e) return;
  const res = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Verifying "${e.node.title}"` },
    () => project.ctl.call("blueprint/verify", { blueprintId: bp.id, nodeId: e.node.id }),
  );
  const s = verifySummary(res);
  if (s.failed) void vscode.window.showWarningMessage(s.text);
  else void vscode.window.showInformationMessage(s.text);
}

export async function diffPrevious(project: Project): Promise<string | undefined> {
  const bp = project.model.blueprint;
  if (!bp) throw new Error("No active blueprint: ingest one first.");
  if (!bp.primary?.parentId) {
    void vscode.window.showInformationMessage(`"${bp.title}" has one version: nothing to compare.`);
    return undefined;
  }
  const d = await project.ctl.call("blueprint/diff", { blueprintId: bp.id });
  const md = diffMarkdown(bp.title, d);
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: md });
  await vscode.window.showTextDocument(doc, { preview: true });
  return md;
}
