// The panel's script. It keeps a copy of the view state (a snapshot from
// the extension, then the same events the extension applies) and renders
// it with plain DOM. No inline handlers: every button carries data-action
// and one delegated listener dispatches.

import type { HostMessage, WebviewMessage } from "../src/messages";
import type { FullAutoApprovals, FullAutoRun, FullAutoReceipt as Receipt } from "../src/protocol";
import type { ApprovalDecision } from "../src/wire";
import {
  applyEvent,
  initialState,
  threadLabel,
  unwrapShell,
  type Conversation,
  type ItemView,
  type PendingApproval,
  type TurnView,
  type ViewState,
} from "../src/store";
import { diffStat } from "../src/diffstat";
import { parseAlignmentReason } from "../src/project";
import { escapeHtml as esc, renderInline, renderMarkdown } from "./markdown";
import { invalidateRun, renderRun, renderRunOptions, runClick, runStartMessage } from "./runs";

interface VsCodeApi {
  postMessage(msg: unknown): void;
  getState(): unknown;
  setState(s: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (m: WebviewMessage) => vscode.postMessage(m);

let state: ViewState = initialState();
let renderQueued = false;
const openDetails = new Set<string>();
const closedDetails = new Set<string>();

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const els = {
  conn: $("conn"),
  notices: $("notices"),
  attention: $("attention"),
  threads: $("threads"),
  threadCount: $("thread-count"),
  fullauto: $("fullauto"),
  plan: $("plan"),
  conversation: $("conversation"),
  usage: $("usage"),
  composer: $<HTMLTextAreaElement>("composer"),
  interrupt: $("interrupt"),
  send: $<HTMLButtonElement>("send"),
};

// ---------- messages from the extension ----------

window.addEventListener("message", (e: MessageEvent) => {
  const msg = e.data as HostMessage;
  if (!msg || typeof msg !== "object") return;
  switch (msg.type) {
    case "snapshot":
      state = msg.state;
      resetConversationDom();
      scheduleRender();
      break;
    case "events":
      for (const ev of msg.events) applyEvent(state, ev);
      scheduleRender();
      break;
    case "focusComposer":
      els.composer.focus();
      break;
    case "submitComposer":
      submit(true);
      break;
  }
});

// ---------- user actions ----------

function submit(fromCommand = false): void {
  const text = els.composer.value;
  if (text.trim() === "") {
    if (fromCommand) post({ type: "composerEmpty" });
    return;
  }
  post({ type: "send", text });
  els.composer.value = "";
  saveDraft();
}

function saveDraft(): void {
  vscode.setState({ draft: els.composer.value });
}

els.composer.addEventListener("keydown", (e: KeyboardEvent) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    submit();
  }
});
els.composer.addEventListener("input", saveDraft);

function num(v: string): number | undefined {
  const n = Number(v);
  return v.trim() !== "" && Number.isFinite(n) && n > 0 ? n : undefined;
}

function startFullAuto(): void {
  const val = (id: string) => ((document.getElementById(id) as HTMLInputElement | null)?.value ?? "").trim();
  const minutes = num(val("fa-time"));
  const budgets = {
    tokens: num(val("fa-tokens")),
    turns: num(val("fa-turns")),
    timeMs: minutes === undefined ? undefined : Math.round(minutes * 60000),
  };
  post({
    type: "fullAutoStart",
    objective: val("fa-objective"),
    budgets,
    approvals: (val("fa-approvals") || "policy") as FullAutoApprovals,
  });
}

document.addEventListener("click", (e: MouseEvent) => {
  const target = e.target as HTMLElement;
  const link = target.closest("a[data-href]") as HTMLAnchorElement | null;
  if (link) {
    e.preventDefault();
    post({ type: "openLink", href: link.dataset.href ?? "" });
    return;
  }
  const el = target.closest("[data-action]") as HTMLElement | null;
  if (!el || (el as HTMLButtonElement).disabled) return;
  const d = el.dataset;
  if (runClick(d.action ?? "", d, state, post, () => {
    invalidateRun();
    render();
  })) return;
  switch (d.action) {
    case "send":
      submit();
      break;
    case "runStart": {
      const m = runStartMessage(els.composer.value);
      if (!m) {
        els.composer.focus();
        break;
      }
      post(m);
      els.composer.value = "";
      saveDraft();
      (document.getElementById("run-options") as HTMLDetailsElement | null)?.removeAttribute("open");
      break;
    }
    case "interrupt":
      post({ type: "interrupt" });
      break;
    case "newThread":
      post({ type: "newThread" });
      break;
    case "refreshThreads":
      e.preventDefault();
      post({ type: "refreshThreads" });
      break;
    case "openThread":
      post({ type: "openThread", threadId: d.threadId ?? "" });
      break;
    case "openRun":
      post({ type: "openRun", runId: d.runId ?? "" });
      break;
    case "renameThread":
      e.stopPropagation();
      post({ type: "renameThread", threadId: d.threadId ?? "" });
      break;
    case "archiveThread":
      e.stopPropagation();
      post({ type: "archiveThread", threadId: d.threadId ?? "" });
      break;
    case "openDashboard":
      post({ type: "openDashboard" });
      break;
    case "approve": {
      const key = d.key ?? "";
      post({ type: "approval", key, decision: d.decision as ApprovalDecision });
      // Disable the card's buttons until the answer is confirmed.
      el.closest(".approval")?.querySelectorAll("button").forEach((b) => ((b as HTMLButtonElement).disabled = true));
      break;
    }
    case "openDiff":
      post({ type: "openDiff", threadId: d.threadId ?? "", itemId: d.itemId ?? "", index: Number(d.index ?? 0) });
      break;
    case "openTurnDiff":
      post({ type: "openTurnDiff", threadId: d.threadId ?? "" });
      break;
    case "revertTurn":
      post({ type: "revertTurn", threadId: d.threadId ?? "", turnId: d.turnId ?? "" });
      break;
    case "fullAutoStart":
      startFullAuto();
      break;
    case "fullAutoPause":
      post({ type: "fullAuto", action: "pause" });
      break;
    case "fullAutoResume":
      post({ type: "fullAuto", action: "resume" });
      break;
    case "fullAutoStop":
      post({ type: "fullAuto", action: "stop" });
      break;
    case "dismissNotice":
      post({ type: "dismissNotice", id: Number(d.id) });
      break;
    case "restartServer":
      post({ type: "restartServer" });
      break;
    case "showLog":
      post({ type: "showLog" });
      break;
    case "manageTrust":
      post({ type: "manageTrust" });
      break;
  }
});

document.addEventListener("change", (e: Event) => {
  const t = e.target as HTMLInputElement;
  if (t.id === "fa-toggle") {
    if (t.checked) startFullAuto();
    else post({ type: "fullAuto", action: "stop" });
    // Redraw from the state once the extension answers (the switch follows the run).
    (faMain() as any).__html = undefined;
  }
});

// <details> state survives re-renders.
document.addEventListener(
  "toggle",
  (e: Event) => {
    const d = e.target as HTMLDetailsElement;
    const key = d.dataset?.key;
    if (!key) return;
    if (d.open) {
      openDetails.add(key);
      closedDetails.delete(key);
    } else {
      openDetails.delete(key);
      closedDetails.add(key);
    }
  },
  true,
);

function detailsOpen(key: string, byDefault: boolean): string {
  const open = openDetails.has(key) || (byDefault && !closedDetails.has(key));
  return open ? " open" : "";
}

// ---------- rendering ----------

function scheduleRender(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function setHtml(el: HTMLElement, html: string): void {
  if ((el as any).__html !== html) {
    el.innerHTML = html;
    (el as any).__html = html;
  }
}

function activeConversation(): Conversation | undefined {
  return state.activeThreadId ? state.conversations[state.activeThreadId] : undefined;
}

function render(): void {
  renderConnection();
  renderNotices();
  renderAttention();
  renderThreads();
  // A run shown replaces the thread's Full Auto box, plan and conversation.
  const runShown = renderRun(state);
  els.fullauto.classList.toggle("hidden", runShown);
  els.conversation.classList.toggle("hidden", runShown);
  renderFullAuto();
  if (runShown) els.plan.classList.add("hidden");
  else renderPlan();
  renderConversation();
  renderFooter();
  renderRunOptions();
  document.body.dataset.rendered = String(state.rev);
}

function renderConnection(): void {
  const c = state.connection;
  const labels: Record<string, string> = {
    stopped: "stopped",
    starting: "starting…",
    ready: "connected",
    restarting: "restarting…",
    failed: "not running",
    untrusted: "off: folder not trusted",
  };
  els.conn.className = `conn conn-${c.state}`;
  els.conn.title = c.message ?? c.version ?? "";
  setHtml(els.conn, `<span class="dot"></span>apserver ${esc(labels[c.state] ?? c.state)}`);
}

function renderNotices(): void {
  const parts = state.notices.map(
    (n) =>
      `<div class="notice notice-${n.level}"><span>${esc(n.text)}</span>` +
      `<button type="button" class="icon-btn small" data-action="dismissNotice" data-id="${n.id}" title="Dismiss">✕</button></div>`,
  );
  const c = state.connection;
  if (c.state === "failed") {
    parts.unshift(
      `<div class="notice notice-error"><span>${esc(c.message ?? "apserver is not running.")}</span>` +
        `<button type="button" data-action="restartServer">Restart</button>` +
        `<button type="button" class="secondary" data-action="showLog">Show log</button></div>`,
    );
  } else if (c.state === "untrusted") {
    parts.unshift(
      `<div class="notice notice-warning" id="untrusted"><span>${esc(c.message ?? "This folder is not trusted.")}</span>` +
        `<button type="button" data-action="manageTrust">Manage Workspace Trust</button></div>`,
    );
  } else if (c.state === "restarting") {
    parts.unshift(`<div class="notice notice-warning"><span>${esc(c.message ?? "apserver crashed; restarting…")}</span></div>`);
  }
  setHtml(els.notices, parts.join(""));
}

function renderAttention(): void {
  const a = state.attention;
  if (!a || a.count <= 0) {
    els.attention.classList.add("hidden");
    setHtml(els.attention, "");
    return;
  }
  els.attention.classList.remove("hidden");
  const since = a.oldestSinceMs ? `oldest ${ago(a.oldestSinceMs)}\n` : "";
  const first = a.items[0];
  // An item of a run opens the run; any other its thread.
  const action = first?.runId
    ? ` data-action="openRun" data-run-id="${esc(first.runId)}"`
    : first
      ? ` data-action="openThread" data-thread-id="${esc(first.threadId)}"`
      : "";
  els.attention.title = since + a.items.map((i) => `${i.kind}: ${i.reason}`).join("\n");
  setHtml(els.attention, `<span class="attention-count"${action}>⚑ ${a.count} waiting</span>`);
}

function ago(sinceMs: number): string {
  const s = Math.max(0, Math.round((Date.now() - sinceMs) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

function statusLabel(t: { status: { type: string; activeFlags?: string[] } }): string {
  const s = t.status;
  if (s.type === "active") return s.activeFlags && s.activeFlags.length ? "waiting" : "running";
  if (s.type === "systemError") return "error";
  if (s.type === "notLoaded") return "";
  return s.type;
}

function renderThreads(): void {
  els.threadCount.textContent = state.threads.length ? ` (${state.threads.length})` : "";
  const rows = state.threads.map((t) => {
    const active = t.id === state.activeThreadId ? " active" : "";
    const st = statusLabel(t);
    const fa = state.fullAuto[t.id];
    const faBadge = fa && fa.state !== "stopped" ? `<span class="badge fa-${fa.state}" title="Full Auto: ${fa.state}">auto: ${fa.state}</span>` : "";
    const when = t.updatedAt ? new Date(t.updatedAt * 1000).toLocaleString() : "";
    return (
      `<li class="thread${active}" data-action="openThread" data-thread-id="${esc(t.id)}" title="${esc(t.cwd)}\n${esc(when)}">` +
      `<span class="thread-label">${esc(threadLabel(t))}</span>${faBadge}` +
      // A Full Auto badge already says running / waiting.
      (st && !(faBadge && (st === "running" || st === "waiting")) ? `<span class="badge st-${esc(st)}">${esc(st)}</span>` : "") +
      `<span class="thread-actions">` +
      `<button type="button" class="icon-btn small" data-action="renameThread" data-thread-id="${esc(t.id)}" title="Rename">rename</button>` +
      `<button type="button" class="icon-btn small" data-action="archiveThread" data-thread-id="${esc(t.id)}" title="Archive">archive</button>` +
      `</span></li>`
    );
  });
  setHtml(els.threads, rows.join("") || `<li class="muted empty">No threads yet.</li>`);
}

function fmtNum(n: number | undefined | null): string {
  if (n === undefined || n === null || !Number.isFinite(n)) return "–";
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(Math.round(n));
}

function fmtDuration(ms: number | undefined | null): string {
  if (!ms && ms !== 0) return "–";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? ` ${s % 60}s` : ""}`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

function meter(label: string, spent: number, budget: number | null | undefined, fmt: (n: number) => string): string {
  const pct = budget ? Math.min(100, Math.round((spent / budget) * 100)) : 0;
  const bar = budget ? `<progress max="100" value="${pct}"></progress>` : "";
  return `<div class="meter"><span class="meter-label">${label}</span><span>${fmt(spent)}${budget ? ` / ${fmt(budget)}` : ""}</span>${bar}</div>`;
}

const STATE_TEXT: Record<string, string> = {
  running: "running",
  paused: "paused",
  waiting: "waiting on you",
  stopped: "stopped",
};

function decisionHtml(r: Receipt, cls = "decision"): string {
  const conf = Number.isFinite(r.confidence) ? ` · ${Math.round(r.confidence * 100)}%` : "";
  return (
    `<div class="${cls} action-${esc(r.action)}">` +
    `<div class="decision-head"><span class="badge action">${esc(r.action)}</span>` +
    `<span class="muted">#${esc(String(r.seq))} · ${esc(r.source)} · rule ${esc(r.rule)}${esc(conf)}${r.executed ? "" : " · not executed"}</span></div>` +
    `<div class="decision-reason">${renderInline(r.reason)}</div>` +
    (r.stopCondition ? `<div class="muted">stop condition: ${esc(r.stopCondition)}</div>` : "") +
    (r.nextInput ? `<details class="next-input" data-key="ni-${esc(r.id)}"${detailsOpen(`ni-${r.id}`, false)}><summary>next input</summary><pre>${esc(r.nextInput)}</pre></details>` : "") +
    `</div>`
  );
}

function renderFullAuto(): void {
  const tid = state.activeThreadId;
  const run: FullAutoRun | undefined = tid ? state.fullAuto[tid] : undefined;
  const live = !!run && run.state !== "stopped";
  const unsupported = state.fullAutoSupported === false;
  const disabled = !tid || unsupported || state.connection.state !== "ready";
  const head =
    `<div class="fa-head"><label class="switch" title="${unsupported ? "This apserver has no Full Auto" : "Full Auto"}">` +
    `<input type="checkbox" id="fa-toggle"${live ? " checked" : ""}${disabled ? " disabled" : ""}><span class="slider"></span></label>` +
    `<span class="fa-title">Full Auto</span>` +
    (run ? `<span class="badge fa-${esc(run.state)}" id="fa-state">${esc(STATE_TEXT[run.state] ?? run.state)}</span>` : "") +
    `<span class="spacer"></span>` +
    (live && run!.state !== "paused" ? `<button type="button" class="secondary small" data-action="fullAutoPause">Pause</button>` : "") +
    (live && run!.state === "paused" ? `<button type="button" class="secondary small" data-action="fullAutoResume">Resume</button>` : "") +
    (live ? `<button type="button" class="secondary small" data-action="fullAutoStop">Stop</button>` : "") +
    `</div>`;

  let body = "";
  if (unsupported) {
    body = `<div class="muted">This apserver does not offer Full Auto (fullAuto/* methods).</div>`;
  } else if (run) {
    const b = run.budgets ?? {};
    const sp = run.spent ?? { tokens: 0, turns: 0, timeMs: 0, costUsd: 0 };
    body +=
      (run.objective ? `<div class="fa-objective"><span class="muted">Objective:</span> ${renderInline(run.objective)}</div>` : "") +
      (run.reason ? `<div class="fa-reason">${renderInline(run.reason)}</div>` : "") +
      `<div class="meters">` +
      meter("tokens", sp.tokens, b.tokens, fmtNum) +
      meter("turns", sp.turns, b.turns, (n) => String(n)) +
      meter("time", sp.timeMs, b.timeMs, fmtDuration) +
      (b.costUsd ? meter("cost", sp.costUsd, b.costUsd, (n) => `$${n.toFixed(2)}`) : "") +
      `</div>` +
      `<div class="muted">approvals: ${esc(run.approvals)}${run.stopCondition ? ` · stop condition: <span id="fa-stop">${esc(run.stopCondition)}</span>` : ""}</div>` +
      (run.lastDecision ? `<div class="fa-last"><div class="fa-sub">Latest decision</div>${decisionHtml(run.lastDecision, "decision last")}</div>` : "");
  }
  const showForm = !unsupported && !live;
  setHtml(faMain(), head + `<div id="fa-status">${body}</div>`);
  const slot = faSlot();
  slot.classList.toggle("hidden", !showForm);
  if (showForm) renderFullAutoForm(slot, disabled);
}

function faMain(): HTMLElement {
  let el = document.getElementById("fa-main");
  if (!el) {
    el = document.createElement("div");
    el.id = "fa-main";
    els.fullauto.appendChild(el);
  }
  return el;
}

function faSlot(): HTMLElement {
  let el = document.getElementById("fa-form-slot");
  if (!el) {
    el = document.createElement("div");
    el.id = "fa-form-slot";
    els.fullauto.appendChild(el);
  }
  return el;
}

function renderFullAutoForm(slot: HTMLElement, disabled: boolean): void {
  const d = state.defaults;
  const key = JSON.stringify([d, disabled]);
  // Keep what the user typed: only rebuild the form when its inputs change.
  if ((slot as any).__key === key && slot.firstChild) return;
  const old = (id: string) => (document.getElementById(id) as HTMLInputElement | null)?.value;
  const prev = { objective: old("fa-objective"), tokens: old("fa-tokens"), turns: old("fa-turns"), time: old("fa-time"), approvals: old("fa-approvals") };
  const minutes = d.budgets.timeMs ? String(Math.round(d.budgets.timeMs / 60000)) : "";
  const sel = (v: string) => ((prev.approvals ?? d.approvals) === v ? " selected" : "");
  const dis = disabled ? " disabled" : "";
  slot.innerHTML =
    `<details class="fa-form" data-key="fa-form"${detailsOpen("fa-form", false)}><summary>Objective, budgets and approvals</summary>` +
    `<label class="field wide">Objective <textarea id="fa-objective" rows="2" placeholder="optional: what done looks like">${esc(prev.objective ?? "")}</textarea></label>` +
    `<div class="fields">` +
    `<label class="field">Tokens <input id="fa-tokens" type="number" min="0" step="1000" value="${esc(prev.tokens ?? String(d.budgets.tokens ?? ""))}"></label>` +
    `<label class="field">Turns <input id="fa-turns" type="number" min="0" value="${esc(prev.turns ?? String(d.budgets.turns ?? ""))}"></label>` +
    `<label class="field">Time (min) <input id="fa-time" type="number" min="0" value="${esc(prev.time ?? minutes)}"></label>` +
    `<label class="field">Approvals <select id="fa-approvals">` +
    `<option value="policy"${sel("policy")}>policy</option><option value="ask"${sel("ask")}>ask me</option><option value="never"${sel("never")}>never ask</option></select></label>` +
    `</div>` +
    `<button type="button" data-action="fullAutoStart"${dis}>Start Full Auto</button></details>`;
  (slot as any).__key = key;
}

function renderPlan(): void {
  const conv = activeConversation();
  const plan = conv?.plan;
  if (!plan || plan.steps.length === 0) {
    els.plan.classList.add("hidden");
    setHtml(els.plan, "");
    return;
  }
  els.plan.classList.remove("hidden");
  const icon: Record<string, string> = { pending: "○", inProgress: "◐", completed: "●" };
  const done = plan.steps.filter((s) => s.status === "completed").length;
  setHtml(
    els.plan,
    `<div class="box-title">Plan <span class="muted">${done}/${plan.steps.length}</span></div>` +
      (plan.explanation ? `<div class="muted">${esc(plan.explanation)}</div>` : "") +
      `<ol class="plan-steps">${plan.steps
        .map((s) => `<li class="step step-${esc(s.status)}"><span class="step-icon">${icon[s.status] ?? "○"}</span>${esc(s.step)}</li>`)
        .join("")}</ol>`,
  );
}

// ----- conversation (incremental: one element per turn and per item) -----

interface Rendered {
  el: HTMLElement;
  sig: string;
}
let convDom: { threadId: string | null; turns: Map<string, Rendered & { items: Map<string, Rendered>; tail: Rendered }> } = {
  threadId: null,
  turns: new Map(),
};

function resetConversationDom(): void {
  convDom = { threadId: null, turns: new Map() };
  els.conversation.innerHTML = "";
  (els.conversation as any).__html = undefined;
}

function approvalsFor(threadId: string, turnId: string): PendingApproval[] {
  return state.approvals.filter((a) => a.threadId === threadId && a.turnId === turnId);
}

function renderConversation(): void {
  const conv = activeConversation();
  const tid = state.activeThreadId;
  const nearBottom =
    els.conversation.scrollHeight - els.conversation.scrollTop - els.conversation.clientHeight < 80;
  if (convDom.threadId !== tid) {
    resetConversationDom();
    convDom.threadId = tid;
  }
  if (!tid || !conv) {
    setHtml(
      els.conversation,
      `<div class="empty-state"><p>No thread open.</p><button type="button" data-action="newThread">Start a new thread</button>` +
        `<p class="muted">or pick one from Threads above.</p></div>`,
    );
    return;
  }
  if ((els.conversation as any).__html) {
    els.conversation.innerHTML = "";
    (els.conversation as any).__html = undefined;
  }
  if (conv.turns.length === 0 && !els.conversation.querySelector(".turn")) {
    if (!els.conversation.querySelector(".empty-state")) {
      els.conversation.innerHTML = `<div class="empty-state muted">Send a message to start.</div>`;
    }
    return;
  }
  els.conversation.querySelector(".empty-state")?.remove();

  for (const turn of conv.turns) {
    let rt = convDom.turns.get(turn.id);
    if (!rt) {
      const el = document.createElement("div");
      el.className = "turn";
      el.dataset.turnId = turn.id;
      const tail = document.createElement("div");
      tail.className = "turn-tail";
      el.appendChild(tail);
      els.conversation.appendChild(el);
      rt = { el, sig: "", items: new Map(), tail: { el: tail, sig: "" } };
      convDom.turns.set(turn.id, rt);
    }
    const approvals = approvalsFor(tid, turn.id);
    for (const item of turn.items) {
      const mine = approvals.filter((a) => a.itemId === item.id);
      const sig = `${item.rev}|${mine.map((a) => a.key).join(",")}`;
      let ri = rt.items.get(item.id);
      if (!ri) {
        const el = document.createElement("div");
        el.className = "item";
        el.dataset.itemId = item.id;
        rt.el.insertBefore(el, rt.tail.el);
        ri = { el, sig: "" };
        rt.items.set(item.id, ri);
      }
      if (ri.sig !== sig) {
        ri.el.className = `item item-${item.type}`;
        ri.el.innerHTML = renderItem(tid, turn, item, mine.length > 0) + mine.map((a) => renderApproval(a)).join("");
        ri.sig = sig;
      }
    }
    const orphans = approvals.filter((a) => !turn.items.some((i) => i.id === a.itemId));
    const tailSig = `${turn.rev}|${turn.status}|${orphans.map((a) => a.key).join(",")}|${turn.decisions.length}`;
    if (rt.tail.sig !== tailSig) {
      rt.tail.el.innerHTML = orphans.map((a) => renderApproval(a)).join("") + renderTurnTail(tid, turn);
      rt.tail.sig = tailSig;
    }
  }
  // Drop what the state no longer has (a resume replaces the turns with the stored ones).
  const turnIds = new Set(conv.turns.map((t) => t.id));
  for (const [id, rt] of convDom.turns) {
    if (!turnIds.has(id)) {
      rt.el.remove();
      convDom.turns.delete(id);
      continue;
    }
    const turn = conv.turns.find((t) => t.id === id)!;
    if (rt.items.size > turn.items.length || [...rt.items.keys()].some((k) => !turn.items.some((i) => i.id === k))) {
      const keep = new Set(turn.items.map((i) => i.id));
      for (const [iid, ri] of rt.items) {
        if (!keep.has(iid)) {
          ri.el.remove();
          rt.items.delete(iid);
        }
      }
    }
  }
  if (nearBottom) els.conversation.scrollTop = els.conversation.scrollHeight;
}

const shellInner = unwrapShell;

function renderItem(threadId: string, _turn: TurnView, v: ItemView, awaitingApproval = false): string {
  const it = v.item as any;
  switch (v.type) {
    case "userMessage": {
      const text = (Array.isArray(it.content) ? it.content : [])
        .map((c: any) => (c.type === "text" ? c.text : c.type === "localImage" ? `[image ${c.path}]` : `[${c.type}]`))
        .join("\n");
      return `<div class="msg user">${esc(text)}</div>`;
    }
    case "agentMessage":
      return `<div class="msg agent markdown${v.done ? "" : " streaming"}">${renderMarkdown(v.text)}</div>`;
    case "plan": {
      const key = `p-${v.id}`;
      return `<details class="plan-item" data-key="${esc(key)}"${detailsOpen(key, false)}><summary>Plan updated</summary><div class="markdown">${renderMarkdown(v.text)}</div></details>`;
    }
    case "reasoning": {
      const text = v.summary.filter((s) => s.trim() !== "").join("\n\n");
      const raw = v.content.filter((s) => s.trim() !== "").join("\n\n");
      if (!text && !raw && v.done) return "";
      const key = `r-${v.id}`;
      return (
        `<details class="reasoning" data-key="${esc(key)}"${detailsOpen(key, false)}><summary>${v.done ? "Thought" : "Thinking…"}` +
        `${text ? `<span class="muted">: ${esc(firstLine(text))}</span>` : ""}</summary>` +
        `<div class="markdown">${renderMarkdown(text || raw)}</div></details>`
      );
    }
    case "commandExecution": {
      const status = v.status ?? "inProgress";
      const exit = typeof it.exitCode === "number" ? `exit ${it.exitCode}` : "";
      const label =
        status === "inProgress" && awaitingApproval
          ? "needs approval"
          : status === "inProgress" ? "running…" : status === "completed" ? exit || "done" : status === "failed" ? `failed${exit ? ` (${exit})` : ""}` : status;
      const dur = typeof it.durationMs === "number" ? ` · ${fmtDuration(it.durationMs)}` : "";
      const out = v.output;
      return (
        `<div class="cmd cmd-${esc(status)}"><div class="cmd-head"><span class="prompt">$</span>` +
        `<code class="cmd-text" title="${esc(it.command ?? "")}">${esc(shellInner(it.command ?? ""))}</code>` +
        `<span class="badge st-${awaitingApproval && status === "inProgress" ? "waiting" : esc(status)}">${esc(label)}${esc(dur)}</span></div>` +
        (it.cwd ? `<div class="muted cmd-cwd">${esc(it.cwd)}</div>` : "") +
        (out ? `<pre class="output">${esc(out)}</pre>` : "") +
        `</div>`
      );
    }
    case "fileChange": {
      const changes: any[] = Array.isArray(it.changes) ? it.changes : [];
      const status = v.status ?? "inProgress";
      const rows = changes
        .map((c, i) => {
          const kind = c.kind?.type ?? "update";
          const letter = kind === "add" ? "A" : kind === "delete" ? "D" : "M";
          const st = diffStat(String(c.diff ?? ""), c.kind ?? { type: "update" });
          const moved = c.kind?.move_path ? ` → ${esc(c.kind.move_path)}` : "";
          return (
            `<li><span class="kind kind-${esc(kind)}">${letter}</span><span class="path">${esc(c.path)}${moved}</span>` +
            `<span class="stat"><span class="add">+${st.added}</span> <span class="del">−${st.removed}</span></span>` +
            `<button type="button" class="secondary small" data-action="openDiff" data-thread-id="${esc(threadId)}" data-item-id="${esc(v.id)}" data-index="${i}">Open diff</button></li>`
          );
        })
        .join("");
      const key = `fc-${v.id}`;
      const preview = changes.map((c) => `${c.path}\n${c.diff ?? ""}`).join("\n");
      const badge = status === "inProgress" ? (awaitingApproval ? "needs approval" : "proposed") : status;
      return (
        `<div class="filechange fc-${esc(status)}"><div class="fc-head">${status === "inProgress" ? "Proposed change to" : "Changed"} ${changes.length === 1 ? "1 file" : `${changes.length} files`}` +
        ` <span class="badge st-${awaitingApproval ? "waiting" : esc(status)}">${esc(badge)}</span></div>` +
        `<ul class="fc-files">${rows}</ul>` +
        `<details class="fc-preview" data-key="${esc(key)}"${detailsOpen(key, false)}><summary>Show patch</summary><pre class="diff">${diffHtml(preview)}</pre></details></div>`
      );
    }
    case "contextCompaction":
      return `<div class="muted divider">context compacted</div>`;
    case "dynamicToolCall":
    case "mcpToolCall": {
      const key = `t-${v.id}`;
      const name = v.type === "mcpToolCall" ? `${it.server ?? ""}/${it.tool ?? ""}` : String(it.tool ?? "tool");
      const args = typeof it.arguments === "string" ? it.arguments : JSON.stringify(it.arguments ?? {});
      const status = v.status ?? "inProgress";
      const ok = it.success === false || status === "failed" ? "failed" : status === "inProgress" ? "running…" : "done";
      const out = Array.isArray(it.contentItems)
        ? it.contentItems.map((c: any) => (typeof c?.text === "string" ? c.text : "")).join("\n")
        : it.error?.message ?? "";
      return (
        `<details class="tool" data-key="${esc(key)}"${detailsOpen(key, false)}><summary><span class="tool-name">${esc(name)}</span> ` +
        `<code class="tool-args">${esc(args.length > 120 ? args.slice(0, 119) + "…" : args)}</code> <span class="badge st-${esc(status)}">${esc(ok)}</span></summary>` +
        (out ? `<pre class="output">${esc(out.length > 20000 ? out.slice(0, 20000) + "\n…" : out)}</pre>` : "") +
        `</details>`
      );
    }
    default: {
      const key = `g-${v.id}`;
      return (
        `<details class="generic" data-key="${esc(key)}"${detailsOpen(key, false)}><summary>${esc(v.type)}${v.status ? ` · ${esc(v.status)}` : ""}</summary>` +
        `<pre>${esc(JSON.stringify(it, null, 2).slice(0, 20000))}</pre></details>`
      );
    }
  }
}

function firstLine(s: string): string {
  const l = s.split("\n").find((x) => x.trim() !== "") ?? "";
  const plain = l.replace(/[*_`#>]/g, "").trim();
  return plain.length > 90 ? plain.slice(0, 89) + "…" : plain;
}

function diffHtml(diff: string): string {
  return diff
    .split("\n")
    .map((l) => {
      const cls = l.startsWith("+") && !l.startsWith("+++") ? "add" : l.startsWith("-") && !l.startsWith("---") ? "del" : l.startsWith("@@") ? "hunk" : "";
      return cls ? `<span class="${cls}">${esc(l)}</span>` : esc(l);
    })
    .join("\n");
}

function renderApproval(a: PendingApproval): string {
  const isCmd = a.method === "item/commandExecution/requestApproval";
  const title = isCmd ? "Run this command?" : "Apply these changes?";
  const btn = (decision: ApprovalDecision, label: string, cls: string) =>
    `<button type="button" class="${cls}" data-action="approve" data-key="${esc(a.key)}" data-decision="${decision}">${label}</button>`;
  const align = parseAlignmentReason(a.reason);
  if (align) {
    // Stopped by the project brain: what it judged, why, and against which decision.
    const names = align.decisions.map((d) => `<b>${esc(d.title)}</b> <span class="muted">${esc(d.id)}</span>`).join(", ");
    return (
      `<div class="approval alignment verdict-${esc(align.verdict)}" data-key="${esc(a.key)}" role="group" aria-label="${title}">` +
      `<div class="approval-title">⚠ ${title} <span class="badge verdict">${esc(align.verdict)}</span></div>` +
      (isCmd && a.command ? `<pre class="approval-cmd">${esc(shellInner(a.command))}</pre>` : "") +
      (a.cwd ? `<div class="muted">in ${esc(a.cwd)}</div>` : "") +
      (names ? `<div class="alignment-decision">Conflicts with decision ${names}</div>` : "") +
      `<ul class="alignment-reasons">${align.reasons
        .split("; ")
        .map((r) => `<li>${esc(r)}</li>`)
        .join("")}</ul>` +
      `<div class="buttons">` +
      btn("accept", names ? "Approve and supersede the decision" : "Approve", "primary") +
      btn("decline", "Decline", "secondary") +
      `<button type="button" class="secondary link" data-action="openDashboard">Decisions…</button>` +
      `</div></div>`
    );
  }
  return (
    `<div class="approval" data-key="${esc(a.key)}" role="group" aria-label="${title}">` +
    `<div class="approval-title">⚠ ${title}</div>` +
    (isCmd && a.command ? `<pre class="approval-cmd">${esc(shellInner(a.command))}</pre>` : "") +
    (a.cwd ? `<div class="muted">in ${esc(a.cwd)}</div>` : "") +
    (a.grantRoot ? `<div class="muted">grants write access to ${esc(a.grantRoot)}</div>` : "") +
    (a.reason ? `<div class="approval-reason">${esc(a.reason)}</div>` : "") +
    `<div class="buttons">` +
    btn("accept", "Approve", "primary") +
    btn("acceptForSession", "Approve for session", "secondary") +
    btn("decline", "Decline", "secondary") +
    btn("cancel", "Cancel", "secondary danger") +
    `</div></div>`
  );
}

function compactDecision(r: Receipt): string {
  return (
    `<div class="decision compact action-${esc(r.action)}" title="${esc(`#${r.seq} · ${r.source} · rule ${r.rule}`)}">` +
    `<span class="muted">Full Auto</span> <span class="badge action">${esc(r.action)}</span> ${renderInline(r.reason)}</div>`
  );
}

function renderTurnTail(tid: string, turn: TurnView): string {
  let s = turn.decisions.map((d) => compactDecision(d)).join("");
  if (turn.retrying && turn.status === "inProgress") s += `<div class="turn-status retry">⟳ ${esc(turn.retrying)} (retrying)</div>`;
  if (turn.status === "interrupted") s += `<div class="turn-status interrupted">■ interrupted</div>`;
  if (turn.status === "failed") s += `<div class="turn-status failed">✖ ${esc(turn.error?.message ?? "turn failed")}</div>`;
  if (turn.status === "inProgress" && turn.items.every((i) => i.done)) s += `<div class="turn-status working"><span class="spinner"></span> working…</div>`;
  if (turn.status !== "inProgress")
    s +=
      `<div class="turn-actions"><button type="button" class="link small" data-action="revertTurn" data-thread-id="${esc(tid)}" ` +
      `data-turn-id="${esc(turn.id)}" title="Restore the files this turn and later ones changed, and remove them from the thread">↶ undo this turn</button></div>`;
  return s;
}

function renderFooter(): void {
  const conv = activeConversation();
  const busy = !!conv?.activeTurnId;
  els.interrupt.classList.toggle("hidden", !busy);
  els.send.textContent = busy ? "Steer" : "Send";
  els.send.title = busy ? "Add this to the running turn" : "Send (Ctrl+Enter)";
  const ready = state.connection.state === "ready";
  els.send.disabled = !ready;
  const runBtn = $<HTMLButtonElement>("run-start");
  runBtn.disabled = !ready || state.runsSupported === false;
  runBtn.title = state.runsSupported === false ? "This apserver has no runs (run/* methods)" : "Start a run with this request: a plan to review, then tasks on a branch of its own";
  const u = conv?.tokenUsage;
  let usage = "";
  if (u) {
    const ctx = u.modelContextWindow ? ` · context ${fmtNum(u.last.inputTokens)} / ${fmtNum(u.modelContextWindow)}` : "";
    usage = `Tokens: ${fmtNum(u.total.totalTokens)} total (in ${fmtNum(u.total.inputTokens)}, out ${fmtNum(u.total.outputTokens)}) · last ${fmtNum(u.last.totalTokens)}${ctx}`;
  }
  const diffBtn =
    conv?.diff && conv.diff.diff.trim() !== ""
      ? ` <button type="button" class="link small" data-action="openTurnDiff" data-thread-id="${esc(conv.threadId)}">turn diff</button>`
      : "";
  setHtml(els.usage, `<span id="usage-text">${esc(usage)}</span>${diffBtn}`);
}

// ---------- start ----------

const saved = vscode.getState() as { draft?: string } | undefined;
if (saved?.draft) els.composer.value = saved.draft;
document.body.dataset.script = "loaded";
scheduleRender();
post({ type: "ready" });
