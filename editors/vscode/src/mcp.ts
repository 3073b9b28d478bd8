// The MCP section without the "vscode" module: apserver's MCP servers
// (mcpServerStatus/list) as rows with their status and tools, for the MCP
// Servers view (mcpview.ts); config/mcpServer/reload reloads them.

import type { McpServerStatus } from "./protocol";

export interface McpRow {
  name: string;
  /** connected, starting, failed, … or "unknown" when the server says nothing. */
  status: string;
  icon: string;
  description: string;
  tooltip: string;
  tools: { name: string; description: string }[];
}

const ICON: Record<string, string> = {
  connected: "pass-filled",
  starting: "sync~spin",
  notStarted: "circle-large-outline",
  authenticationRequired: "key",
  failed: "error",
  cancelled: "circle-slash",
  disabled: "circle-slash",
};

/** One row per server, by name, with its tools sorted. */
export function mcpRows(servers: McpServerStatus[], startup: Record<string, { status: string; error?: string | null }> = {}): McpRow[] {
  return [...servers]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((s) => {
      const live = startup[s.name];
      const status = s.runtimeStatus ?? live?.status ?? "unknown";
      const tools = Object.values(s.tools ?? {})
        .map((t) => ({ name: t.name, description: (t.title || t.description || "").split("\n")[0] }))
        .sort((a, b) => a.name.localeCompare(b.name));
      const parts = [status, `${tools.length} tool${tools.length === 1 ? "" : "s"}`];
      if (s.authStatus && s.authStatus !== "unsupported" && s.authStatus !== "unknown") parts.push(s.authStatus);
      const err = s.toolsError || live?.error;
      const lines = [`${s.name}: ${status}`];
      if (s.serverInfo) lines.push(`${(s.serverInfo as { name?: string }).name ?? ""} ${(s.serverInfo as { version?: string }).version ?? ""}`.trim());
      if (s.httpOrigin) lines.push(s.httpOrigin);
      if (err) lines.push(`error: ${err}`);
      return { name: s.name, status, icon: err ? "error" : ICON[status] ?? "circle-large-outline", description: parts.join(" · "), tooltip: lines.join("\n"), tools };
    });
}
