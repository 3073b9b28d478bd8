// The panel's run view: a run's stages and progress, what it waits on
// (plan approval, the high-risk gate, clarifications, a repair), its plan as
// a tree that can be edited while it waits for approval, and the plan's
// dependency graph drawn by Mermaid. Mermaid is large: dist/mermaid.js is
// loaded, with this script's nonce, the first time a plan is shown.

import type { WebviewMessage } from "../src/messages";
import type { RunAutonomy as Autonomy, Run, RunTask, RunTaskRisk as TaskRisk, RunTrustValue as Trust } from "../src/protocol";
import { RUN_STAGES } from "../src/wire";
import { gatedTask, openClarifications, planGraph, pullRequestText, runLabel, stageText, waitingText, type PlanEdit } from "../src/runs";
import type { ViewState } from "../src/store";
import { escapeHtml as esc, renderInline, renderMarkdown, safeUrl } from "./markdown";

type Post = (m: WebviewMessage) => void;

// Captured while this script runs: the nonce and URL Mermaid is loaded with.
const self = document.currentScript as HTMLScriptElement | null;
const scriptNonce = self?.nonce || self?.getAttribute("nonce") || "";
const mermaidUrl = self ? self.src.replace(/webview\.js(\?[^#]*)?(#.*)?$/, "mermaid.js") : "";

/** The task being edited ("new": the add form), or null. Local to this webview. */
let editing: string | null = null;

const $ = (id: string) => document.getElementById(id);

function setHtml(el: HTMLElement, html: string): void {
  if ((el as any).__html === html) return;
  // Keep what the user is typing across re-renders (a notification can arrive meanwhile).
  const kept = new Map<string, string>();
  el.querySelectorAll<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>("input[id], textarea[id], select[id]").forEach((f) =>
    kept.set(f.id, f.value),
  );
  const focused = document.activeElement && el.contains(document.activeElement) ? (document.activeElement as HTMLElement).id : "";
  el.innerHTML = html;
  (el as any).__html = html;
  for (const [id, v] of kept) {
    const f = document.getElementById(id) as HTMLInputElement | null;
    if (f && el.contains(f) && f.dataset.keep !== "no") f.value = v;
  }
  if (focused) document.getElementById(focused)?.focus();
}

const STATUS_TEXT: Record<string, string> = {
  running: "running",
  waiting: "waiting on you",
  paused: "paused",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

function shortSha(s: string | null | undefined): string {
  return s ? s.slice(0, 8) : "";
}

/** Renders the active run (or hides the run view). Returns whether a run is shown. */
export function renderRun(state: ViewState): boolean {
  const section = $("run")!;
  const run = state.activeRunId ? state.runs[state.activeRunId] : undefined;
  if (!state.activeRunId) {
    section.classList.add("hidden");
    return false;
  }
  section.classList.remove("hidden");
  const body = $("run-body")!;
  if (!run) {
    setHtml(body, `<div class="run-head"><button type="button" class="link small" data-action="closeRun">← threads</button><span class="muted">loading run ${esc(state.activeRunId)}…</span></div>`);
    $("run-graph-box")!.classList.add("hidden");
    return true;
  }
  if (editing && editing !== "new" && !(run.plan?.tasks ?? []).some((t) => t.id === editing)) editing = null;
  setHtml(body, runHtml(run));
  renderGraph(run);
  return true;
}

function runHtml(run: Run): string {
  const live = run.status === "running" || run.status === "waiting" || run.status === "paused";
  const stageIdx = RUN_STAGES.indexOf(run.stage);
  const stages = RUN_STAGES.map((s, i) => {
    const cls = run.stage === "done" || i < stageIdx ? "done" : i === stageIdx ? "current" : "todo";
    return `<li class="stage stage-${cls}" data-stage="${s}">${esc(stageText(s))}</li>`;
  }).join("");
  const c = run.counts ?? { total: 0, completed: 0, running: 0, failed: 0, blocked: 0, skipped: 0, pending: 0, approved: 0 };
  const extra = [
    c.running ? `${c.running} running` : "",
    c.failed ? `${c.failed} failed` : "",
    c.blocked ? `${c.blocked} blocked` : "",
    c.skipped ? `${c.skipped} skipped` : "",
  ]
    .filter(Boolean)
    .join(", ");
  const progress =
    c.total > 0
      ? `<div class="run-progress"><progress max="${c.total}" value="${c.completed}"></progress><span id="run-count">${c.completed}/${c.total} tasks done</span>${extra ? `<span class="muted"> (${esc(extra)})</span>` : ""}</div>`
      : "";
  const actions =
    `<div class="run-actions">` +
    (live && run.status !== "paused" ? `<button type="button" class="secondary small" data-action="runPause">Pause</button>` : "") +
    (live && run.waitingFor !== "taskThread" && (run.status === "paused" || run.waitingFor === "resume") ? `<button type="button" class="small" data-action="runResume">Resume</button>` : "") +
    (!live && run.status === "failed" ? `<button type="button" class="small" data-action="runResume">Resume</button>` : "") +
    (live ? `<button type="button" class="secondary small danger" data-action="runCancel">Cancel</button>` : "") +
    `<span class="spacer"></span>` +
    `<button type="button" class="link small" data-action="openRunFile" data-file="plan.md">plan.md</button>` +
    `<button type="button" class="link small" data-action="openRunFile" data-file="state.md">state.md</button>` +
    `</div>`;
  const trust = run.trust ? `plan ${run.trust.planning} · implementation ${run.trust.implementation} · fixes ${run.trust.fixes}` : "";
  return (
    `<div class="run-head"><button type="button" class="link small" data-action="closeRun" title="Back to the thread">←</button>` +
    `<span class="badge run-st-${esc(run.status)}" id="run-status">${esc(STATUS_TEXT[run.status] ?? run.status)}</span>` +
    `<span class="run-title" title="${esc(run.request)}">${esc(runLabel(run))}</span></div>` +
    `<div class="run-meta muted"><span title="the run's branch, from its base branch">⎇ <code id="run-branch">${esc(run.branch)}</code> from <code>${esc(run.baseBranch)}</code></span>` +
    `<span>autonomy ${esc(run.autonomy)}</span>${trust ? `<span>trust: ${esc(trust)}</span>` : ""}</div>` +
    `<ol class="stages" id="run-stages">${stages}</ol>` +
    (run.reason ? `<div class="run-reason" id="run-reason">${renderInline(run.reason)}</div>` : "") +
    prHtml(run) +
    progress +
    actions +
    waitCards(run) +
    planHtml(run) +
    commitsHtml(run)
  );
}

function waitCards(run: Run): string {
  let s = "";
  const gate = gatedTask(run);
  if (gate) {
    s +=
      `<div class="run-card gate" id="run-gate" data-task-id="${esc(gate.id)}"><div class="run-card-title">⚠ High-risk task waits for you</div>` +
      `<div><b>${esc(gate.id)}: ${esc(gate.title)}</b> <span class="badge risk-${esc(gate.risk)}">${esc(gate.risk)} risk</span></div>` +
      (gate.description ? `<div class="markdown">${renderMarkdown(gate.description)}</div>` : "") +
      acceptanceHtml(gate) +
      `<div class="buttons"><button type="button" data-action="runTaskDecision" data-task-id="${esc(gate.id)}" data-decision="approve">Approve task</button>` +
      `<button type="button" class="secondary" data-action="runTaskDecision" data-task-id="${esc(gate.id)}" data-decision="skip">Skip task</button></div></div>`;
  }
  for (const q of openClarifications(run)) {
    const opts = (q.options ?? [])
      .map((o, i) => `<button type="button" class="secondary small" data-action="runClarifyOption" data-clarification-id="${esc(q.id)}" data-index="${i}">${esc(o)}</button>`)
      .join("");
    s +=
      `<div class="run-card clarification" data-clarification-id="${esc(q.id)}"><div class="run-card-title">? The ${esc(stageText(q.stage))} stage asks</div>` +
      `<div class="clar-question">${renderInline(q.question)}</div>` +
      (q.context ? `<div class="clar-context muted">${renderInline(q.context)}</div>` : "") +
      (opts ? `<div class="buttons">${opts}</div>` : "") +
      `<div class="clar-answer"><input type="text" id="clar-${esc(q.id)}" placeholder="Your answer">` +
      `<button type="button" data-action="runClarify" data-clarification-id="${esc(q.id)}">Answer</button></div></div>`;
  }
  const rp = run.repairProposal;
  if (rp) {
    const blocked = run.plan?.tasks?.find((t) => t.id === rp.taskId);
    s +=
      `<div class="run-card repair" id="run-repair"><div class="run-card-title">✖ Task ${esc(rp.taskId)}${blocked ? ` (${esc(blocked.title)})` : ""} is blocked</div>` +
      `<div class="fa-sub">What failed</div><pre class="repair-failure">${esc(rp.failure)}</pre>` +
      `<div class="fa-sub">Proposed fix, inserted before it</div>` +
      `<div><b>${esc(rp.proposedTask.id)}: ${esc(rp.proposedTask.title)}</b> <span class="badge risk-${esc(rp.proposedTask.risk)}">${esc(rp.proposedTask.risk)} risk</span></div>` +
      (rp.proposedTask.description ? `<div class="markdown">${renderMarkdown(rp.proposedTask.description)}</div>` : "") +
      acceptanceHtml(rp.proposedTask) +
      `<div class="buttons"><button type="button" data-action="runRepairApprove" data-task-id="${esc(rp.taskId)}">Approve fix and resume</button>` +
      `<button type="button" class="secondary danger" data-action="runCancel">Cancel run</button></div></div>`;
  }
  if (run.waitingFor === "taskThread") {
    // The task's thread waits (its full auto paused, or an approval or a
    // question): it is answered there, and the run goes on by itself.
    const t = run.plan?.tasks?.find((x) => x.id === run.currentTaskId);
    s +=
      `<div class="run-card task-thread" id="run-task-thread"><div class="run-card-title">⏸ Task ${esc(t?.id ?? run.currentTaskId ?? "")}${t ? ` (${esc(t.title)})` : ""} waits in its thread</div>` +
      (run.reason ? `<div class="muted">${esc(run.reason)}</div>` : "") +
      `<div class="muted">Answer it there (resume its full auto, or the approval or question); the run then goes on by itself.</div>` +
      (t?.threadId ? `<div class="buttons"><button type="button" data-action="openThread" data-thread-id="${esc(t.threadId)}">Open the task's thread</button></div>` : "") +
      `</div>`;
  } else if (run.waitingFor && !gate && !rp && run.waitingFor !== "planApproval" && run.waitingFor !== "clarification") {
    s += `<div class="run-card"><div class="run-card-title">The run ${esc(waitingText(run.waitingFor))}</div></div>`;
  }
  return s;
}

function list(title: string, xs: string[] | undefined, code = false): string {
  if (!xs || xs.length === 0) return "";
  return `<div class="acc"><span class="muted">${title}:</span><ul>${xs.map((x) => `<li>${code ? `<code>${esc(x)}</code>` : esc(x)}</li>`).join("")}</ul></div>`;
}

function acceptanceHtml(t: { acceptance?: { criteria?: string[]; checks?: string[]; files?: string[] } }): string {
  const a = t.acceptance ?? {};
  return list("criteria", a.criteria) + list("checks", a.checks, true) + list("files", a.files, true);
}

const STATUS_ICON: Record<string, string> = {
  pending: "○",
  approved: "◔",
  running: "◐",
  completed: "●",
  failed: "✖",
  blocked: "⊘",
  skipped: "⤼",
};

function taskHtml(run: Run, t: RunTask, i: number, n: number, editable: boolean): string {
  const current = run.currentTaskId === t.id ? " current" : "";
  if (editable && editing === t.id) return `<li class="task editing" data-task-id="${esc(t.id)}">${taskForm(t, run)}</li>`;
  const deps = (t.dependencies ?? []).length ? `<span class="task-deps muted" title="depends on">after ${t.dependencies.map(esc).join(", ")}</span>` : "";
  const tools = editable
    ? `<span class="task-tools">` +
      `<button type="button" class="icon-btn small" data-action="runTaskMove" data-task-id="${esc(t.id)}" data-delta="-1" title="Move up" aria-label="Move up"${i === 0 ? " disabled" : ""}>↑</button>` +
      `<button type="button" class="icon-btn small" data-action="runTaskMove" data-task-id="${esc(t.id)}" data-delta="1" title="Move down" aria-label="Move down"${i === n - 1 ? " disabled" : ""}>↓</button>` +
      `<button type="button" class="icon-btn small" data-action="runTaskEdit" data-task-id="${esc(t.id)}" title="Edit">edit</button>` +
      `<button type="button" class="icon-btn small" data-action="runTaskDelete" data-task-id="${esc(t.id)}" title="Delete"${n <= 1 ? " disabled" : ""}>delete</button>` +
      `</span>`
    : "";
  const key = `task-${run.id}-${t.id}`;
  const detail =
    (t.description ? `<div class="markdown">${renderMarkdown(t.description)}</div>` : "") +
    `<div class="muted">${esc(t.kind)}${t.estimate ? ` · ~${esc(t.estimate)}` : ""}${t.retryCount ? ` · ${t.retryCount} retr${t.retryCount === 1 ? "y" : "ies"}` : ""}</div>` +
    acceptanceHtml(t) +
    (t.lastFailure ? `<div class="fa-sub">Last failure</div><pre class="repair-failure">${esc(t.lastFailure)}</pre>` : "") +
    (t.commit ? `<div class="muted">commit <code class="task-commit">${esc(shortSha(t.commit))}</code></div>` : "") +
    (t.threadId ? `<button type="button" class="link small" data-action="openThread" data-thread-id="${esc(t.threadId)}">open the task's thread</button>` : "");
  return (
    `<li class="task task-${esc(t.status)}${current}" data-task-id="${esc(t.id)}">` +
    `<div class="task-row"><span class="task-icon" title="${esc(t.status)}">${STATUS_ICON[t.status] ?? "○"}</span>` +
    `<span class="task-title"><span class="task-id">${esc(t.id)}</span> ${esc(t.title)}</span>` +
    `<span class="badge risk-${esc(t.risk)}" title="risk">${esc(t.risk)}</span>` +
    `<span class="badge task-st st-${esc(t.status)}">${esc(t.status)}</span>${tools}</div>` +
    deps +
    `<details class="task-detail" data-key="${esc(key)}"><summary>details</summary>${detail}</details></li>`
  );
}

function lines(xs: string[] | undefined): string {
  return esc((xs ?? []).join("\n"));
}

function taskForm(t: Partial<RunTask> | null, run: Run): string {
  const id = t?.id ?? "new";
  const f = (name: string) => `tf-${name}`;
  const risk = (r: TaskRisk) => `<option value="${r}"${(t?.risk ?? "low") === r ? " selected" : ""}>${r}</option>`;
  const others = (run.plan?.tasks ?? []).filter((x) => x.id !== id).map((x) => x.id);
  return (
    `<div class="task-form" data-task-id="${esc(id)}">` +
    `<label class="field wide">Title <input type="text" id="${f("title")}" value="${esc(t?.title ?? "")}"></label>` +
    `<label class="field wide">Description <textarea id="${f("description")}" rows="3">${esc(t?.description ?? "")}</textarea></label>` +
    `<div class="fields"><label class="field">Risk <select id="${f("risk")}">${risk("low")}${risk("medium")}${risk("high")}</select></label>` +
    `<label class="field">Depends on <input type="text" id="${f("deps")}" value="${esc((t?.dependencies ?? []).join(", "))}" placeholder="${esc(others.join(", "))}"></label></div>` +
    `<label class="field wide">Acceptance criteria (one a line) <textarea id="${f("criteria")}" rows="2">${lines(t?.acceptance?.criteria)}</textarea></label>` +
    `<label class="field wide">Checks (commands that must exit 0, one a line) <textarea id="${f("checks")}" rows="2">${lines(t?.acceptance?.checks)}</textarea></label>` +
    `<label class="field wide">Files that must exist (one a line) <textarea id="${f("files")}" rows="1">${lines(t?.acceptance?.files)}</textarea></label>` +
    `<div class="buttons"><button type="button" data-action="runTaskSave" data-task-id="${esc(id)}">${id === "new" ? "Add task" : "Save"}</button>` +
    `<button type="button" class="secondary" data-action="runTaskCancelEdit">Cancel</button></div></div>`
  );
}

function planHtml(run: Run): string {
  const plan = run.plan;
  const tasks = plan?.tasks ?? [];
  if (!plan || (tasks.length === 0 && run.stage === "planning")) {
    return `<div class="run-plan muted" id="run-plan-empty"><span class="spinner"></span> the planner is writing the plan…</div>`;
  }
  const editable = run.waitingFor === "planApproval";
  const rows = tasks.map((t, i) => taskHtml(run, t, i, tasks.length, editable)).join("");
  const add = editable
    ? editing === "new"
      ? `<div class="task editing">${taskForm(null, run)}</div>`
      : `<button type="button" class="link small" data-action="runTaskAdd">+ add a task</button>`
    : "";
  const approval = editable
    ? `<div class="run-card plan-approval" id="run-plan-approval"><div class="run-card-title">The plan waits for your approval</div>` +
      `<div class="buttons"><button type="button" data-action="runPlanApprove">Approve plan</button></div>` +
      `<label class="field wide">Or send it back to the planner with feedback <textarea id="run-feedback" rows="2" placeholder="What should change?"></textarea></label>` +
      `<div class="buttons"><button type="button" class="secondary" data-action="runPlanReject">Send back</button></div></div>`
    : "";
  return (
    `<div class="run-plan"><div class="box-title">Plan <span class="muted">v${plan.version}${plan.approved ? " · approved" : ""}</span></div>` +
    (plan.summary ? `<div class="plan-summary markdown">${renderMarkdown(plan.summary)}</div>` : "") +
    `<ol class="run-tasks" id="run-tasks">${rows}</ol>${add}</div>` +
    approval
  );
}

function prHtml(run: Run): string {
  const pr = run.pullRequest;
  if (!pr) return "";
  const url = safeUrl(pr.url);
  const link = url ? `<a href="#" data-href="${esc(url)}" id="run-pr-link">pull request #${esc(String(pr.number))}</a>` : `pull request #${esc(String(pr.number))}`;
  return (
    `<div class="run-pr pr-${esc(pr.state)} checks-${esc(pr.checks?.state || "none")}" id="run-pr">⇅ ${link} ` +
    `<span class="muted" id="run-pr-status">${esc(pullRequestText(pr).replace(/^#\d+ /, ""))}</span>` +
    (pr.checks?.summary ? `<div class="muted">${esc(pr.checks.summary)}</div>` : "") +
    `</div>`
  );
}

function commitsHtml(run: Run): string {
  const done = (run.plan?.tasks ?? []).filter((t) => t.commit);
  if (done.length === 0 && !run.mergeCommit) return "";
  return (
    `<div class="run-commits" id="run-commits"><div class="fa-sub">Commits on ${esc(run.branch)}</div><ul>` +
    done.map((t) => `<li><code>${esc(shortSha(t.commit))}</code> ${esc(t.id)}: ${esc(t.title)}</li>`).join("") +
    `</ul>` +
    (run.mergeCommit ? `<div>merged into <code>${esc(run.baseBranch)}</code> as <code id="run-merge">${esc(shortSha(run.mergeCommit))}</code></div>` : "") +
    `</div>`
  );
}

// ---------- the graph ----------

let mermaidLoad: Promise<any> | null = null;
let graphSeq = 0;
let drawnSrc = "";

function loadMermaid(): Promise<any> {
  if (!mermaidLoad) {
    mermaidLoad = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.nonce = scriptNonce;
      s.src = mermaidUrl;
      s.onload = () => {
        const m = (window as any).mermaid;
        if (!m) return reject(new Error("mermaid.js did not define mermaid"));
        const light = document.body.classList.contains("vscode-light") || document.body.classList.contains("vscode-high-contrast-light");
        m.initialize({
          startOnLoad: false,
          securityLevel: "strict",
          htmlLabels: false,
          theme: light ? "default" : "dark",
          fontFamily: getComputedStyle(document.body).fontFamily,
          flowchart: { htmlLabels: false, useMaxWidth: true },
        });
        resolve(m);
      };
      s.onerror = () => {
        mermaidLoad = null;
        reject(new Error("could not load mermaid.js"));
      };
      document.head.appendChild(s);
    });
  }
  return mermaidLoad;
}

// The panel's CSP allows no inline styles, and Mermaid writes them: a
// <style> in its SVG and style="…" on elements, both while it measures and
// in what it returns. They go through the CSSOM instead (which the CSP does
// not govern): the rules as constructed style sheets, the attributes as
// element.style.cssText.

const decode = (t: string) =>
  t.replace(/&(lt|gt|quot|#39|apos|amp);/g, (_, e: string) => ({ lt: "<", gt: ">", quot: '"', "#39": "'", apos: "'", amp: "&" })[e] ?? "");

/**
 * Takes the inline styles out of markup before anything parses it (the
 * CSP judges even an inert parse): <style> elements are cut out and their
 * rules returned; style="…" becomes data-css="…" for attachStyles.
 */
function stripStyles(html: string): { html: string; css: string } {
  let css = "";
  const out = html
    .replace(/<style\b[^>]*>([\s\S]*?)<\/style>/gi, (_, rules: string) => {
      css += decode(rules) + "\n";
      return "";
    })
    .replace(/(\s)style\s*=\s*("[^"]*"|'[^']*')/gi, "$1data-css=$2");
  return { html: out, css };
}

/** Applies the data-css marks stripStyles left, through the CSSOM. */
function attachStyles(root: Element): void {
  for (const el of [root, ...Array.from(root.querySelectorAll("[data-css]"))]) {
    const v = el.getAttribute("data-css");
    if (v === null) continue;
    el.removeAttribute("data-css");
    (el as HTMLElement).style.cssText = v;
  }
}

function adoptCss(css: string, into: CSSStyleSheet[]): void {
  if (css.trim() === "") return;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(css);
  into.push(sheet);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

/** The sheets of the graph on the page (replaced by the next drawing). */
let graphSheets: CSSStyleSheet[] = [];

/**
 * Runs fn (Mermaid's render) with the DOM's ways of writing inline styles
 * routed through the CSSOM. Returns fn's result and the rules of the
 * <style> elements it tried to attach.
 */
async function withoutInlineStyles<T>(fn: () => Promise<T>): Promise<{ result: T; css: string }> {
  const setAttribute = Element.prototype.setAttribute;
  const append = Node.prototype.appendChild;
  const insert = Node.prototype.insertBefore;
  const inner = Object.getOwnPropertyDescriptor(Element.prototype, "innerHTML")!;
  const parse = DOMParser.prototype.parseFromString;
  const temp: CSSStyleSheet[] = [];
  let css = "";
  const styleEl = (n: Node) => n.nodeType === 1 && (n as Element).localName === "style";
  const take = (n: Node) => {
    css += (n.textContent ?? "") + "\n";
    adoptCss(n.textContent ?? "", temp); // it applies while Mermaid measures
  };
  Element.prototype.setAttribute = function (this: Element, name: string, value: string) {
    if (name.toLowerCase() === "style" && "style" in this) {
      (this as HTMLElement).style.cssText = String(value);
      return;
    }
    return setAttribute.call(this, name, value);
  };
  Node.prototype.appendChild = function <N extends Node>(this: Node, child: N): N {
    if (styleEl(child)) {
      take(child);
      return child;
    }
    return append.call(this, child) as N;
  };
  Node.prototype.insertBefore = function <N extends Node>(this: Node, child: N, ref: Node | null): N {
    if (styleEl(child)) {
      take(child);
      return child;
    }
    return insert.call(this, child, ref) as N;
  };
  Object.defineProperty(Element.prototype, "innerHTML", {
    ...inner,
    set(this: Element, v: string) {
      const { html, css: rules } = stripStyles(String(v));
      if (rules) take({ textContent: rules } as Node);
      inner.set!.call(this, html);
      attachStyles(this);
    },
  });
  // Mermaid sanitizes its SVG (DOMPurify parses it): the styles are taken out first.
  DOMParser.prototype.parseFromString = function (this: DOMParser, text: string, type: DOMParserSupportedType) {
    const { html, css: rules } = stripStyles(String(text));
    if (rules) css += rules;
    return parse.call(this, html, type);
  };
  try {
    return { result: await fn(), css };
  } finally {
    DOMParser.prototype.parseFromString = parse;
    Element.prototype.setAttribute = setAttribute;
    Node.prototype.appendChild = append;
    Node.prototype.insertBefore = insert;
    Object.defineProperty(Element.prototype, "innerHTML", inner);
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => !temp.includes(x));
  }
}

/** Puts Mermaid's SVG into the container, its styles through the CSSOM. */
function insertSvg(container: HTMLElement, svgText: string, renderCss: string): void {
  const { html, css } = stripStyles(svgText);
  // An inert document: nothing in it runs.
  const root = new DOMParser().parseFromString(html, "text/html").body.querySelector("svg");
  if (!root) throw new Error("mermaid did not return an SVG");
  const svg = document.importNode(root, true);
  attachStyles(svg);
  document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => !graphSheets.includes(x));
  graphSheets = [];
  adoptCss(css + renderCss, graphSheets);
  container.replaceChildren(svg);
}

function renderGraph(run: Run): void {
  const box = $("run-graph-box")!;
  const container = $("run-graph")!;
  const tasks = run.plan?.tasks ?? [];
  if (tasks.length === 0) {
    box.classList.add("hidden");
    return;
  }
  box.classList.remove("hidden");
  const src = planGraph(run.plan, run.currentTaskId);
  if (src === drawnSrc) return;
  drawnSrc = src;
  const seq = ++graphSeq;
  container.dataset.state = "loading";
  loadMermaid()
    .then((m) => withoutInlineStyles(() => m.render(`run-graph-svg-${seq}`, src) as Promise<{ svg: string }>))
    .then(({ result, css }) => {
      if (seq !== graphSeq) return;
      insertSvg(container, result.svg, css);
      container.dataset.state = "drawn";
      container.dataset.src = src;
    })
    .catch((e: unknown) => {
      if (seq !== graphSeq) return;
      drawnSrc = "";
      container.dataset.state = "error";
      container.textContent = `The graph could not be drawn: ${e instanceof Error ? e.message : String(e)}`;
    });
}

// ---------- actions ----------

const val = (id: string) => ((document.getElementById(id) as HTMLInputElement | null)?.value ?? "");
const splitLines = (s: string) => s.split("\n").map((x) => x.trim()).filter(Boolean);
const splitList = (s: string) => s.split(/[,\s]+/).map((x) => x.trim()).filter(Boolean);

/** The run options under the composer (absent = the configured value). */
export function renderRunOptions(): void {
  const body = $("run-options-body");
  if (!body || body.firstChild) return;
  const trust = (id: string, label: string) =>
    `<label class="field">${label} <select id="${id}"><option value="">default</option><option value="manual">ask me</option><option value="auto">automatic</option></select></label>`;
  body.innerHTML =
    trust("ro-planning", "Plan") +
    trust("ro-implementation", "Implementation") +
    trust("ro-fixes", "Fixes") +
    `<label class="field">Autonomy <select id="ro-autonomy"><option value="">default</option><option value="off">plan only</option>` +
    `<option value="suggest">suggest</option><option value="semi_auto">semi auto</option><option value="full_auto">full auto</option></select></label>`;
}

/** The runStart message for the composer's text, or null when it is empty. */
export function runStartMessage(request: string): WebviewMessage | null {
  if (request.trim() === "") return null;
  const trust: { planning?: Trust; implementation?: Trust; fixes?: Trust } = {};
  for (const k of ["planning", "implementation", "fixes"] as const) {
    const v = val(`ro-${k}`);
    if (v === "auto" || v === "manual") trust[k] = v;
  }
  const autonomy = val("ro-autonomy") as Autonomy | "";
  return { type: "runStart", request, ...(Object.keys(trust).length ? { trust } : {}), ...(autonomy ? { autonomy } : {}) };
}

/** Handles a click on a run control; false if the action is not a run's. */
export function runClick(action: string, d: DOMStringMap, state: ViewState, post: Post, rerender: () => void): boolean {
  const runId = state.activeRunId ?? "";
  const edit = (e: PlanEdit) => post({ type: "runPlanEdit", runId, edit: e });
  switch (action) {
    case "closeRun":
      editing = null;
      post({ type: "closeRun" });
      return true;
    case "runPause":
    case "runResume":
    case "runCancel":
      post({ type: "runAction", runId, action: action === "runPause" ? "pause" : action === "runResume" ? "resume" : "cancel" });
      return true;
    case "openRunFile":
      post({ type: "openRunFile", runId, file: d.file === "state.md" ? "state.md" : "plan.md" });
      return true;
    case "runPlanApprove":
      post({ type: "runPlanApprove", runId });
      return true;
    case "runPlanReject": {
      const feedback = val("run-feedback").trim();
      if (!feedback) {
        document.getElementById("run-feedback")?.focus();
        return true;
      }
      post({ type: "runPlanReject", runId, feedback });
      return true;
    }
    case "runTaskMove":
      edit({ op: "move", taskId: d.taskId ?? "", delta: Number(d.delta ?? 0) });
      return true;
    case "runTaskDelete":
      edit({ op: "delete", taskId: d.taskId ?? "" });
      return true;
    case "runTaskEdit":
      dropForm();
      editing = d.taskId ?? null;
      rerender();
      document.getElementById("tf-title")?.focus();
      return true;
    case "runTaskAdd":
      dropForm();
      editing = "new";
      rerender();
      document.getElementById("tf-title")?.focus();
      return true;
    case "runTaskCancelEdit":
      dropForm();
      editing = null;
      rerender();
      return true;
    case "runTaskSave": {
      const title = val("tf-title").trim();
      if (!title) {
        document.getElementById("tf-title")?.focus();
        return true;
      }
      const fields = {
        title,
        description: val("tf-description"),
        risk: (val("tf-risk") || "low") as TaskRisk,
        dependencies: splitList(val("tf-deps")),
        acceptance: { criteria: splitLines(val("tf-criteria")), checks: splitLines(val("tf-checks")), files: splitLines(val("tf-files")) },
      };
      const run = state.runs[runId];
      if (d.taskId === "new") {
        const tasks = run?.plan?.tasks ?? [];
        edit({ op: "add", task: fields, afterTaskId: tasks.length ? tasks[tasks.length - 1].id : null });
      } else {
        edit({ op: "edit", taskId: d.taskId ?? "", patch: fields });
      }
      dropForm();
      editing = null;
      rerender();
      return true;
    }
    case "runTaskDecision":
      post({ type: "runTaskDecision", runId, taskId: d.taskId ?? "", decision: d.decision === "skip" ? "skip" : "approve" });
      return true;
    case "runClarifyOption": {
      const q = state.runs[runId]?.clarifications?.find((c) => c.id === d.clarificationId);
      const answer = q?.options?.[Number(d.index)];
      if (q && answer !== undefined) post({ type: "runClarify", runId, clarificationId: q.id, answer });
      return true;
    }
    case "runClarify": {
      const id = d.clarificationId ?? "";
      const answer = val(`clar-${id}`).trim();
      if (!answer) {
        document.getElementById(`clar-${id}`)?.focus();
        return true;
      }
      post({ type: "runClarify", runId, clarificationId: id, answer });
      return true;
    }
    case "runRepairApprove":
      post({ type: "runRepairApprove", runId, taskId: d.taskId ?? "" });
      return true;
  }
  return false;
}

/** Removes an open task form, so its values do not carry over into the next one. */
function dropForm(): void {
  document.querySelectorAll(".task-form").forEach((f) => f.remove());
  invalidateRun();
}

/** Forces the run view to redraw (after a local change such as opening an edit form). */
export function invalidateRun(): void {
  const body = $("run-body");
  if (body) (body as any).__html = undefined;
}
