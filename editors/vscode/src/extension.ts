import * as vscode from "vscode";
import { Controller, DIFF_SCHEME, isTrusted } from "./controller";
import { FixProblemProvider, problemAt, problemMessage, selectionContext, selectionMessage, surroundingContext } from "./editor";
import { PanelProvider, VIEW_ID } from "./panel";
import { RUN_PRESETS, runThisRequest } from "./runs";
import { RUNS_VIEW_ID, RunsViewProvider, runIdOf } from "./runsview";
import type { ViewState } from "./store";
import {
  BLUEPRINT_VIEW_ID,
  BlueprintViewProvider,
  Dashboard,
  diffPrevious,
  generateTasks,
  goToSource,
  ingestBlueprint,
  managerMenu,
  ManagerStatus,
  chooseMode,
  choosePhase,
  nodeArg,
  Project,
  showCoverage,
  startBuilding,
  verifyNode,
} from "./projectui";
import { runsWaitingForYou, waitingForYou } from "./project";
import { MCP_VIEW_ID, McpViewProvider } from "./mcpview";

let controller: Controller | undefined;

const STATE_LABEL: Record<string, string> = {
  running: "running",
  paused: "paused",
  waiting: "waiting on you",
  stopped: "stopped",
};
const STATE_ICON: Record<string, string> = {
  running: "$(sync~spin)",
  paused: "$(debug-pause)",
  waiting: "$(bell-dot)",
  stopped: "$(circle-slash)",
};

/** The status bar text for a state (exported for tests). */
export function statusBarText(state: ViewState): { text: string; tooltip: string; attention: boolean } {
  const tid = state.activeThreadId;
  const run = tid ? state.fullAuto[tid] : undefined;
  const attention = state.attention.count;
  const attn = attention > 0 ? ` · ${attention} waiting` : "";
  if (state.connection.state === "untrusted") {
    return { text: "$(shield) apserver", tooltip: state.connection.message ?? "This folder is not trusted", attention: false };
  }
  if (state.connection.state === "failed") {
    return { text: "$(error) apserver", tooltip: state.connection.message ?? "apserver is not running", attention: true };
  }
  if (!run) {
    return { text: `$(hubot) apserver${attn}`, tooltip: "Open the apserver panel", attention: attention > 0 };
  }
  const spent = run.spent ? ` ${run.spent.turns}${run.budgets?.turns ? `/${run.budgets.turns}` : ""} turns` : "";
  const text = `${STATE_ICON[run.state] ?? ""} Full Auto: ${STATE_LABEL[run.state] ?? run.state}${run.state === "stopped" ? "" : spent}${attn}`;
  const lines = [`Full Auto ${STATE_LABEL[run.state] ?? run.state}${run.reason ? `: ${run.reason}` : ""}`];
  if (run.lastDecision) lines.push(`Last decision: ${run.lastDecision.action} — ${run.lastDecision.reason}`);
  if (run.stopCondition) lines.push(`Stop condition: ${run.stopCondition}`);
  if (attention > 0) lines.push(`${attention} item(s) waiting on you across threads`);
  return { text, tooltip: lines.join("\n"), attention: run.state === "waiting" || attention > 0 };
}

export function activate(context: vscode.ExtensionContext): Controller {
  const out = vscode.window.createOutputChannel("apserver");
  const ctl = new Controller(context.extensionUri.fsPath, out, context.globalStorageUri?.fsPath);
  controller = ctl;
  const provider = new PanelProvider(context.extensionUri, ctl);

  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  status.name = "apserver Full Auto";
  status.command = "apserver.openPanel";
  let lastStatus = "";
  const updateStatus = () => {
    const s = statusBarText(ctl.state);
    const key = s.text + s.tooltip + s.attention;
    if (key === lastStatus) return;
    lastStatus = key;
    status.text = s.text;
    status.tooltip = s.tooltip;
    status.backgroundColor = s.attention ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  };
  const runsView = new RunsViewProvider(ctl);
  const runsTree = vscode.window.createTreeView(RUNS_VIEW_ID, { treeDataProvider: runsView, showCollapseAll: false });
  const project = new Project(ctl, context.workspaceState);
  const blueprintView = new BlueprintViewProvider(project);
  const blueprintTree = vscode.window.createTreeView(BLUEPRINT_VIEW_ID, { treeDataProvider: blueprintView, showCollapseAll: true });
  const managerStatus = new ManagerStatus(project);
  const dashboard = new Dashboard(project);
  const coverage = vscode.languages.createDiagnosticCollection?.("apserver-blueprint");
  const mcpView = new McpViewProvider(ctl);
  const mcpTree = vscode.window.createTreeView(MCP_VIEW_ID, { treeDataProvider: mcpView });
  let lastWaiting = -1;
  const updateBadge = () => {
    runsView.update();
    const waiting = waitingForYou(runsWaitingForYou(Object.values(ctl.state.runs), project.status), project.status);
    if (waiting !== lastWaiting) {
      lastWaiting = waiting;
      runsTree.badge = waiting > 0 ? { value: waiting, tooltip: `${waiting} waiting for you` } : undefined;
    }
  };
  ctl.onChange = () => {
    updateStatus();
    updateBadge();
    managerStatus.update();
  };
  project.onDidChange(updateBadge);
  runsTree.onDidChangeVisibility?.((e) => {
    if (e.visible) void ctl.refreshRuns().catch(() => undefined);
  });
  if (!isTrusted()) void ctl.ensureStarted(); // shows why nothing starts
  updateStatus();
  status.show();

  const run = <A extends unknown[]>(fn: (...args: A) => Promise<unknown> | unknown) => async (...args: A) => {
    try {
      await fn(...args);
    } catch (e) {
      ctl.showError(e);
    }
  };

  context.subscriptions.push(
    out,
    status,
    runsView,
    runsTree,
    project,
    blueprintView,
    blueprintTree,
    managerStatus,
    dashboard,
    mcpView,
    mcpTree,
    ...(coverage ? [coverage] : []),
    { dispose: () => void ctl.dispose() },
    vscode.window.registerWebviewViewProvider(VIEW_ID, provider, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, {
      provideTextDocumentContent: (uri: vscode.Uri) => ctl.diffContent(uri),
    }),
    vscode.workspace.onDidChangeConfiguration((e) => ctl.onConfigChanged(e)),
    ...(vscode.workspace.onDidGrantWorkspaceTrust ? [vscode.workspace.onDidGrantWorkspaceTrust(() => ctl.trustGranted())] : []),
    vscode.commands.registerCommand("apserver.openPanel", run(() => provider.reveal())),
    vscode.commands.registerCommand("apserver.openInEditor", run(() => provider.openInEditor())),
    vscode.commands.registerCommand(
      "apserver.newThread",
      run(async () => {
        await provider.reveal();
        await ctl.newThread();
      }),
    ),
    vscode.commands.registerCommand("apserver.resumeThread", run(() => ctl.pickThread())),
    vscode.commands.registerCommand("apserver.renameThread", run(() => ctl.renameThread())),
    vscode.commands.registerCommand("apserver.archiveThread", run(() => ctl.archiveThread())),
    vscode.commands.registerCommand("apserver.send", run(() => ctl.sendCommand())),
    vscode.commands.registerCommand("apserver.interrupt", run(() => ctl.interrupt())),
    vscode.commands.registerCommand("apserver.compact", run(() => ctl.compact())),
    vscode.commands.registerCommand("apserver.toggleFullAuto", run(() => ctl.toggleFullAuto())),
    vscode.commands.registerCommand("apserver.fullAutoPause", run(() => ctl.fullAutoAction("pause"))),
    vscode.commands.registerCommand("apserver.fullAutoResume", run(() => ctl.fullAutoAction("resume"))),
    vscode.commands.registerCommand("apserver.fullAutoStop", run(() => ctl.fullAutoAction("stop"))),
    vscode.commands.registerCommand("apserver.restartServer", run(() => ctl.restartServer())),
    vscode.commands.registerCommand("apserver.showLog", () => ctl.showLog()),
    vscode.commands.registerCommand(
      "apserver.askAboutSelection",
      run(async () => {
        const editor = vscode.window.activeTextEditor;
        if (!editor) throw new Error("Open a file and select the code to ask about.");
        const context = selectionContext(editor);
        const question = await vscode.window.showInputBox({
          title: `Ask apserver about ${context.path}:${context.startLine}`,
          prompt: "Your question (empty: explain this code)",
          placeHolder: "Explain this code.",
          ignoreFocusOut: true,
        });
        if (question === undefined) return;
        await provider.reveal();
        await ctl.send(selectionMessage(question, context));
      }),
    ),
    vscode.commands.registerCommand(
      "apserver.fixProblem",
      run(async (uri?: vscode.Uri, range?: vscode.Range, info?: Parameters<typeof problemMessage>[0]) => {
        const p = await problemAt(uri, range, info);
        if (!p) throw new Error("There is no problem under the cursor to fix.");
        await provider.reveal();
        await ctl.send(problemMessage(p.info, surroundingContext(p.doc, p.range), p.range.start.line + 1));
      }),
    ),
    vscode.commands.registerCommand(
      "apserver.openRun",
      run(async (arg?: unknown) => {
        const id = runIdOf(arg, ctl);
        if (!id) return;
        await provider.reveal();
        await ctl.openRun(id);
      }),
    ),
    vscode.commands.registerCommand("apserver.refreshRuns", run(() => ctl.refreshRuns())),
    vscode.commands.registerCommand(
      "apserver.pauseRun",
      run((arg?: unknown) => {
        const id = runIdOf(arg, ctl);
        return id && ctl.runAction(id, "pause");
      }),
    ),
    vscode.commands.registerCommand(
      "apserver.resumeRun",
      run((arg?: unknown) => {
        const id = runIdOf(arg, ctl);
        return id && ctl.runAction(id, "resume");
      }),
    ),
    vscode.commands.registerCommand(
      "apserver.cancelRun",
      run((arg?: unknown) => {
        const id = runIdOf(arg, ctl);
        return id && ctl.runAction(id, "cancel");
      }),
    ),
    vscode.commands.registerCommand(
      "apserver.runThis",
      run(async (uri?: vscode.Uri) => {
        // From the explorer or an editor tab: a file; from the editor: the selection (or the file).
        const editor = vscode.window.activeTextEditor;
        const fileUri = uri instanceof vscode.Uri ? uri : editor?.document.uri;
        if (!fileUri) throw new Error("Open a file or select code to run on.");
        const useSelection = !!editor && editor.document.uri.toString() === fileUri.toString() && !editor.selection.isEmpty;
        const target = useSelection ? selectionContext(editor!) : { path: vscode.workspace.asRelativePath(fileUri, false) };
        const where = useSelection ? `${target.path}:${(target as { startLine: number }).startLine}` : target.path;
        const instruction = await vscode.window.showInputBox({
          title: `Run on ${where}`,
          prompt: "What should the run do? (it plans, then implements task by task on a branch of its own)",
          ignoreFocusOut: true,
        });
        if (!instruction || instruction.trim() === "") return;
        const preset = await vscode.window.showQuickPick(RUN_PRESETS, {
          title: "How should the run go on?",
          placeHolder: "Trust and autonomy",
          ignoreFocusOut: true,
        });
        if (!preset) return;
        const folder = vscode.workspace.getWorkspaceFolder?.(fileUri);
        await provider.reveal();
        await ctl.startRun(runThisRequest(instruction, target), {
          trust: preset.trust,
          autonomy: preset.autonomy,
          cwd: folder?.uri.fsPath,
        });
      }),
    ),
    vscode.commands.registerCommand(
      "apserver.startRun",
      run(async () => {
        const request = await vscode.window.showInputBox({
          title: "Start a run",
          prompt: "What should the run do? (it plans, then implements task by task on a branch of its own)",
          ignoreFocusOut: true,
        });
        if (!request || request.trim() === "") return;
        const preset = await vscode.window.showQuickPick(RUN_PRESETS, { title: "How should the run go on?", ignoreFocusOut: true });
        if (!preset) return;
        await provider.reveal();
        await ctl.startRun(request, { trust: preset.trust, autonomy: preset.autonomy });
      }),
    ),
    vscode.commands.registerCommand("apserver.ingestBlueprint", run((file?: unknown) => ingestBlueprint(project, typeof file === "string" ? file : undefined))),
    vscode.commands.registerCommand("apserver.refreshBlueprint", run(() => project.refresh(true))),
    vscode.commands.registerCommand("apserver.blueprint.goToSource", run(async (arg?: unknown) => goToSource(project, await nodeArg(project, arg, "Go to the source of…")))),
    vscode.commands.registerCommand("apserver.showCoverage", run(() => showCoverage(project, coverage!))),
    vscode.commands.registerCommand("apserver.diffBlueprint", run(() => diffPrevious(project))),
    vscode.commands.registerCommand(
      "apserver.generateTasks",
      run(async (arg?: unknown) => {
        const shown = await generateTasks(project, blueprintView, await nodeArg(project, arg, "Generate the tasks of…"));
        // Show the new tasks: the node opens.
        if (shown?.hasChildren) await blueprintTree.reveal?.(shown, { expand: true, select: false, focus: false });
      }),
    ),
    vscode.commands.registerCommand("apserver.startBuilding", run(async (arg?: unknown) => startBuilding(project, await nodeArg(project, arg, "Start building…")))),
    vscode.commands.registerCommand("apserver.verifyNode", run(async (arg?: unknown) => verifyNode(project, await nodeArg(project, arg, "Verify…")))),
    vscode.commands.registerCommand("apserver.manager.menu", run(() => managerMenu(project))),
    vscode.commands.registerCommand("apserver.manager.chooseMode", run(() => chooseMode(project))),
    vscode.commands.registerCommand("apserver.manager.choosePhase", run(() => choosePhase(project))),
    vscode.commands.registerCommand("apserver.manager.pause", run(() => project.updateSettings({ paused: true }))),
    vscode.commands.registerCommand("apserver.manager.resume", run(() => project.updateSettings({ paused: false }))),
    vscode.commands.registerCommand("apserver.openDashboard", run(() => dashboard.open())),
    vscode.commands.registerCommand("apserver.reloadMcp", run(() => mcpView.reload())),
    vscode.languages.registerCodeActionsProvider({ scheme: "file" }, new FixProblemProvider(), {
      providedCodeActionKinds: FixProblemProvider.kinds,
    }),
  );
  return ctl;
}

export async function deactivate(): Promise<void> {
  const c = controller;
  controller = undefined;
  if (c) await c.dispose();
}
