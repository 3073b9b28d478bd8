// The panel's HTML. The extension and the headless-browser test both use
// this function, so the test sees exactly the CSP and markup VS Code gets.

import { randomBytes } from "node:crypto";

export interface HtmlInput {
  /** webview.cspSource */
  cspSource: string;
  /** A fresh random nonce per render. */
  nonce: string;
  /** webview.asWebviewUri(dist/webview.js) */
  scriptUri: string;
  /** webview.asWebviewUri(dist/webview.css) */
  styleUri: string;
}

export function makeNonce(): string {
  return randomBytes(16).toString("hex");
}

function attr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} https: data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

export function renderWebviewHtml(input: HtmlInput): string {
  const csp = contentSecurityPolicy(input.cspSource, input.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(input.styleUri)}">
<title>apserver</title>
</head>
<body>
<div id="app">
  <div id="notices" aria-live="polite"></div>
  <header id="topbar">
    <span id="conn" class="conn"></span>
    <span id="attention" class="attention hidden" title="Threads waiting on you"></span>
    <span class="spacer"></span>
    <button type="button" class="icon-btn" data-action="newThread" title="New thread">+ New</button>
  </header>
  <details id="threads-box" class="box">
    <summary><span>Threads</span><span id="thread-count" class="muted"></span>
      <button type="button" class="icon-btn small" data-action="refreshThreads" title="Refresh">↻</button></summary>
    <ul id="threads" class="threads"></ul>
  </details>
  <section id="fullauto" class="box"></section>
  <section id="plan" class="box hidden"></section>
  <section id="run" class="hidden">
    <div id="run-body"></div>
    <details id="run-graph-box" class="run-graph" data-key="run-graph" open><summary>Dependency graph</summary><div id="run-graph"></div></details>
  </section>
  <main id="conversation" aria-live="polite"></main>
  <footer id="composer-area">
    <div id="usage" class="muted"></div>
    <textarea id="composer" rows="3" placeholder="Ask apserver… (Ctrl+Enter to send)"></textarea>
    <details id="run-options" class="run-options"><summary>Run options</summary><div id="run-options-body" class="fields"></div></details>
    <div class="composer-buttons">
      <button type="button" id="interrupt" class="secondary hidden" data-action="interrupt">■ Interrupt</button>
      <span class="spacer"></span>
      <button type="button" id="run-start" class="secondary" data-action="runStart" title="Start a run with this request: a plan to review, then tasks on a branch of its own">▶ Run</button>
      <button type="button" id="send" data-action="send">Send</button>
    </div>
  </footer>
</div>
<script nonce="${attr(input.nonce)}" src="${attr(input.scriptUri)}"></script>
</body>
</html>`;
}
