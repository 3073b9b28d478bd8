// The Runs view: a tree in apserver's view container listing the
// workspace's runs (run/list, then run/* notifications) grouped by status.
// A run opens in the panel; its context menu pauses, resumes or cancels it.

import * as vscode from "vscode";
import type { Controller } from "./controller";
import type { Run } from "./protocol";
import { groupRuns, runLabel, runProgress, stageText, waitingText, type RunGroup } from "./runs";

export const RUNS_VIEW_ID = "apserver.runs";

type Node = { kind: "group"; group: RunGroup; label: string; runs: Run[] } | { kind: "run"; run: Run } | { kind: "info"; text: string };

const GROUP_ICON: Record<RunGroup, string> = {
  waiting: "bell-dot",
  running: "sync~spin",
  paused: "debug-pause",
  completed: "pass",
  failed: "error",
  cancelled: "circle-slash",
};

/** The tree's nodes for a state (exported for tests). */
export function runsTree(runs: Run[], supported: boolean | null): Node[] {
  if (supported === false) return [{ kind: "info", text: "This apserver has no runs (run/* methods are missing)." }];
  return groupRuns(runs).map((g) => ({ kind: "group", ...g }));
}

export class RunsViewProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private lastSig = "";

  constructor(private readonly controller: Controller) {}

  /** Refreshes the tree when the runs it shows changed; returns the number waiting on you. */
  update(): number {
    const runs = Object.values(this.controller.state.runs);
    const sig =
      String(this.controller.state.runsSupported) +
      runs.map((r) => `${r.id}|${r.status}|${r.stage}|${r.waitingFor}|${r.counts?.completed}/${r.counts?.total}|${r.request}`).join(";");
    if (sig !== this.lastSig) {
      this.lastSig = sig;
      this.changed.fire(undefined);
    }
    return runs.filter((r) => r.status === "waiting").length;
  }

  getChildren(node?: Node): Node[] {
    if (!node) return runsTree(Object.values(this.controller.state.runs), this.controller.state.runsSupported);
    if (node.kind === "group") return node.runs.map((run) => ({ kind: "run", run }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "info") return new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
    if (node.kind === "group") {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group:${node.group}`;
      item.description = String(node.runs.length);
      item.iconPath = new vscode.ThemeIcon(GROUP_ICON[node.group]);
      return item;
    }
    const r = node.run;
    const item = new vscode.TreeItem(runLabel(r), vscode.TreeItemCollapsibleState.None);
    item.id = `run:${r.id}`;
    item.description = r.status === "waiting" || r.waitingFor === "taskThread" ? waitingText(r.waitingFor) : runProgress(r);
    item.tooltip = new vscode.MarkdownString(
      [
        `**${runLabel(r)}**`,
        `${r.status} · ${stageText(r.stage)}${r.reason ? ` — ${r.reason}` : ""}`,
        `branch \`${r.branch}\` from \`${r.baseBranch}\``,
        `${r.counts?.completed ?? 0}/${r.counts?.total ?? 0} tasks · ${r.id}`,
      ].join("\n\n"),
    );
    item.contextValue = `run.${r.status}`;
    item.command = { command: "apserver.openRun", title: "Open Run", arguments: [r.id] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** The run id a command got: a Runs view node, a run id, or none (the panel's run). */
export function runIdOf(arg: unknown, controller: Controller): string | undefined {
  if (typeof arg === "string") return arg;
  const n = arg as Node | undefined;
  if (n && n.kind === "run") return n.run.id;
  return controller.state.activeRunId ?? undefined;
}
