// Editor integration: "Ask apserver about this selection" and the "Fix with
// apserver" quick fix on diagnostics. Both send a message that carries its
// context (file, lines, the code, the diagnostic) to the open thread.

import * as vscode from "vscode";

export interface CodeContext {
  /** Workspace-relative path. */
  path: string;
  languageId: string;
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  text: string;
}

export interface ProblemInfo {
  message: string;
  source?: string;
  code?: string;
  severity: string;
}

function fence(text: string): string {
  let ticks = "```";
  while (text.includes(ticks)) ticks += "`";
  return ticks;
}

function lines(c: CodeContext): string {
  return c.startLine === c.endLine ? `line ${c.startLine}` : `lines ${c.startLine}-${c.endLine}`;
}

function codeBlock(c: CodeContext): string {
  const f = fence(c.text);
  return `${f}${c.languageId}\n${c.text.replace(/\n$/, "")}\n${f}`;
}

/** The message for "Ask apserver about this selection". */
export function selectionMessage(question: string, c: CodeContext): string {
  const q = question.trim() || "Explain this code.";
  return `${q}\n\nIn \`${c.path}\` ${lines(c)}:\n\n${codeBlock(c)}`;
}

/** The message for "Fix with apserver" on a diagnostic. */
export function problemMessage(p: ProblemInfo, c: CodeContext, problemLine: number): string {
  const origin = [p.source, p.code].filter(Boolean).join(" ");
  return (
    `Fix this problem in \`${c.path}\` at line ${problemLine}:\n\n` +
    `${p.severity}${origin ? ` (${origin})` : ""}: ${p.message}\n\n` +
    `The code around it (${lines(c)}):\n\n${codeBlock(c)}\n\nChange only what the fix needs.`
  );
}

const SEVERITY = ["error", "warning", "info", "hint"];

function diagnosticCode(d: vscode.Diagnostic): string | undefined {
  const c = d.code;
  if (c === undefined || c === null) return undefined;
  return typeof c === "object" ? String(c.value) : String(c);
}

/** The selection (or the cursor's line when nothing is selected) as context. */
export function selectionContext(editor: vscode.TextEditor): CodeContext {
  const doc = editor.document;
  let range: vscode.Range = editor.selection;
  if (editor.selection.isEmpty) range = doc.lineAt(editor.selection.active.line).range;
  const end = range.end.character === 0 && range.end.line > range.start.line ? range.end.line - 1 : range.end.line;
  return {
    path: vscode.workspace.asRelativePath(doc.uri, false),
    languageId: doc.languageId,
    startLine: range.start.line + 1,
    endLine: end + 1,
    text: doc.getText(range),
  };
}

/** The lines around a range (three either side) as context. */
export function surroundingContext(doc: vscode.TextDocument, range: vscode.Range): CodeContext {
  const first = Math.max(0, range.start.line - 3);
  const last = Math.min(doc.lineCount - 1, range.end.line + 3);
  const r = new vscode.Range(first, 0, last, doc.lineAt(last).text.length);
  return {
    path: vscode.workspace.asRelativePath(doc.uri, false),
    languageId: doc.languageId,
    startLine: first + 1,
    endLine: last + 1,
    text: doc.getText(r),
  };
}

/** Offers "Fix with apserver" for every diagnostic under the cursor or selection. */
export class FixProblemProvider implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];

  provideCodeActions(doc: vscode.TextDocument, _range: vscode.Range, ctx: vscode.CodeActionContext): vscode.CodeAction[] {
    return ctx.diagnostics.map((d) => {
      const short = d.message.split("\n")[0];
      const action = new vscode.CodeAction(
        `Fix with apserver: ${short.length > 60 ? short.slice(0, 59) + "…" : short}`,
        vscode.CodeActionKind.QuickFix,
      );
      action.diagnostics = [d];
      action.command = {
        command: "apserver.fixProblem",
        title: "Fix with apserver",
        arguments: [doc.uri, d.range, { message: d.message, source: d.source, code: diagnosticCode(d), severity: SEVERITY[d.severity] ?? "problem" }],
      };
      return action;
    });
  }
}

/** Finds the problem to fix: the one passed by the code action, else the first under the cursor. */
export async function problemAt(
  uri?: vscode.Uri,
  range?: vscode.Range,
  info?: ProblemInfo,
): Promise<{ doc: vscode.TextDocument; range: vscode.Range; info: ProblemInfo } | undefined> {
  if (uri && range && info) return { doc: await vscode.workspace.openTextDocument(uri), range, info };
  const editor = vscode.window.activeTextEditor;
  if (!editor) return undefined;
  const pos = editor.selection.active;
  const d = vscode.languages.getDiagnostics(editor.document.uri).find((x) => x.range.contains(pos) || x.range.start.line === pos.line);
  if (!d) return undefined;
  return {
    doc: editor.document,
    range: d.range,
    info: { message: d.message, source: d.source, code: diagnosticCode(d), severity: SEVERITY[d.severity] ?? "problem" },
  };
}
