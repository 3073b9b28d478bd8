// The MCP Servers view: apserver's MCP servers with their status and tools,
// and a Reload button (config/mcpServer/reload).

import * as vscode from "vscode";
import type { Controller } from "./controller";
import { mcpRows, type McpRow } from "./mcp";
import type { McpServerStatus } from "./protocol";

export const MCP_VIEW_ID = "apserver.mcp";

type Node = { kind: "server"; row: McpRow } | { kind: "tool"; name: string; description: string } | { kind: "info"; text: string };

export class McpViewProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private servers: McpServerStatus[] | undefined;
  private error: string | undefined;
  private readonly startup: Record<string, { status: string; error?: string | null }> = {};
  private readonly offs: (() => void)[] = [];

  constructor(private readonly ctl: Controller) {
    const onNote = (method: string, params: unknown) => {
      if (method !== "mcpServer/startupStatus/updated") return;
      const p = params as { name: string; status: string; error?: string | null };
      this.startup[p.name] = { status: p.status, error: p.error };
      this.changed.fire(undefined);
    };
    ctl.serverNotifications.add(onNote);
    this.offs.push(() => ctl.serverNotifications.delete(onNote));
  }

  /** Reads the servers again. */
  async refresh(): Promise<void> {
    try {
      const all: McpServerStatus[] = [];
      let cursor: string | undefined;
      do {
        const res = await this.ctl.call("mcpServerStatus/list", { ...(cursor ? { cursor } : {}) });
        all.push(...res.data);
        cursor = res.nextCursor ?? undefined;
      } while (cursor);
      this.servers = all;
      this.error = undefined;
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
    }
    this.changed.fire(undefined);
  }

  /** Reloads apserver's MCP servers from its configuration, then reads them. */
  async reload(): Promise<void> {
    await this.ctl.call("config/mcpServer/reload", undefined);
    await this.refresh();
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (!node) {
      if (this.servers === undefined && !this.error) await this.refresh();
      if (this.error) return [{ kind: "info", text: `Could not list the MCP servers: ${this.error}` }];
      const rows = mcpRows(this.servers ?? [], this.startup);
      if (!rows.length) return [{ kind: "info", text: "No MCP server configured (docs/mcp.md)." }];
      return rows.map((row) => ({ kind: "server", row }));
    }
    if (node.kind === "server") return node.row.tools.map((t) => ({ kind: "tool", ...t }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "info") return new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
    if (node.kind === "tool") {
      const item = new vscode.TreeItem(node.name, vscode.TreeItemCollapsibleState.None);
      item.description = node.description;
      item.iconPath = new vscode.ThemeIcon("tools");
      return item;
    }
    const r = node.row;
    const item = new vscode.TreeItem(r.name, r.tools.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = `mcp:${r.name}`;
    item.description = r.description;
    item.tooltip = r.tooltip;
    item.iconPath = new vscode.ThemeIcon(r.icon);
    item.contextValue = "mcpServer";
    return item;
  }

  dispose(): void {
    for (const off of this.offs) off();
    this.changed.dispose();
  }
}
