// The editor's own tools, offered to the agent as Codex's dynamic tools
// (experimental API, docs/mcp.md "Editor-provided tools"): `diagnostics`
// (the Problems of a file or of the workspace) and `open_file`. The module
// has no "vscode" import: the controller passes an EditorHost, so the unit
// tests drive it with plain objects.
import type { DynamicToolCallParams, DynamicToolSpec } from "./protocol";

/** One Problem, as VS Code's languages.getDiagnostics gives it (0-based). */
export interface Problem {
  path: string;
  line: number;
  character: number;
  severity: "error" | "warning" | "information" | "hint";
  message: string;
  source?: string;
}

/** What the tools need from the editor. */
export interface EditorHost {
  /** The Problems of one file (an absolute path), or of every file when path is undefined. */
  problems(path?: string): Problem[];
  /** Opens the file in an editor, the cursor at line (1-based) when given. */
  openFile(path: string, line?: number): Promise<void>;
  /** The workspace folder relative paths resolve against (undefined: none open). */
  root(): string | undefined;
}

/** item/tool/call's answer. */
export interface DynamicToolResult {
  contentItems: { type: "inputText"; text: string }[];
  success: boolean;
}

/** The most Problems one diagnostics answer lists. */
export const MAX_PROBLEMS = 200;

/** The tools declared on thread/start. */
export const dynamicToolSpecs: DynamicToolSpec[] = [
  {
    type: "function",
    name: "diagnostics",
    description:
      "The editor's Problems (compiler and linter diagnostics) for one file, or for the whole workspace when path is omitted: path:line:column: severity: message (source).",
    inputSchema: {
      type: "object",
      properties: { path: { type: "string", description: "File path, absolute or relative to the workspace. Omit for every file." } },
      additionalProperties: false,
    },
  },
  {
    type: "function",
    name: "open_file",
    description: "Open a file in the user's editor (to show them something), optionally at a line.",
    inputSchema: {
      type: "object",
      properties: {
        path: { type: "string", description: "File path, absolute or relative to the workspace." },
        line: { type: "integer", minimum: 1, description: "1-based line to put the cursor on." },
      },
      required: ["path"],
      additionalProperties: false,
    },
  },
];

const SEVERITY_ORDER = { error: 0, warning: 1, information: 2, hint: 3 } as const;

function text(s: string, success = true): DynamicToolResult {
  return { contentItems: [{ type: "inputText", text: s }], success };
}

function resolvePath(host: EditorHost, p: string): string | undefined {
  if (p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p)) return p;
  const root = host.root();
  if (!root) return undefined;
  return `${root.replace(/[\\/]+$/, "")}/${p.replace(/^\.\//, "")}`;
}

function relative(host: EditorHost, p: string): string {
  const root = host.root()?.replace(/[\\/]+$/, "");
  return root && p.startsWith(root + "/") ? p.slice(root.length + 1) : p;
}

/** Formats Problems one a line, errors first, at most MAX_PROBLEMS. */
export function formatProblems(host: EditorHost, problems: Problem[], what: string): string {
  if (problems.length === 0) return `No problems in ${what}.`;
  const sorted = [...problems].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] || a.path.localeCompare(b.path) || a.line - b.line || a.character - b.character,
  );
  const lines = sorted
    .slice(0, MAX_PROBLEMS)
    .map((d) => `${relative(host, d.path)}:${d.line + 1}:${d.character + 1}: ${d.severity}: ${d.message.replace(/\s+/g, " ").trim()}${d.source ? ` (${d.source})` : ""}`);
  if (sorted.length > MAX_PROBLEMS) lines.push(`... and ${sorted.length - MAX_PROBLEMS} more.`);
  return lines.join("\n");
}

/**
 * Answers one item/tool/call. Bad arguments and unknown tools are an
 * unsuccessful answer that says what was wrong (the model sees it); it
 * never throws.
 */
export async function callDynamicTool(host: EditorHost, params: DynamicToolCallParams): Promise<DynamicToolResult> {
  const args = (params.arguments ?? {}) as Record<string, unknown>;
  if (typeof args !== "object" || Array.isArray(args)) return text("arguments must be an object", false);
  if (params.namespace) return text(`unknown tool ${params.namespace}/${params.tool}`, false);
  switch (params.tool) {
    case "diagnostics": {
      if (args.path !== undefined && typeof args.path !== "string") return text("path must be a string", false);
      if (args.path === undefined || args.path === "") return text(formatProblems(host, host.problems(), "the workspace"));
      const abs = resolvePath(host, args.path);
      if (!abs) return text(`no workspace folder is open to resolve ${args.path}`, false);
      return text(formatProblems(host, host.problems(abs), relative(host, abs)));
    }
    case "open_file": {
      if (typeof args.path !== "string" || args.path === "") return text("path (a string) is required", false);
      if (args.line !== undefined && (typeof args.line !== "number" || !Number.isInteger(args.line) || args.line < 1))
        return text("line must be an integer ≥ 1", false);
      const abs = resolvePath(host, args.path);
      if (!abs) return text(`no workspace folder is open to resolve ${args.path}`, false);
      try {
        await host.openFile(abs, args.line as number | undefined);
      } catch (e) {
        return text(`could not open ${args.path}: ${e instanceof Error ? e.message : String(e)}`, false);
      }
      return text(`Opened ${relative(host, abs)}${args.line ? ` at line ${args.line}` : ""} in the editor.`);
    }
    default:
      return text(`unknown tool ${params.tool}`, false);
  }
}
