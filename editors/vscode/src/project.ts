// The project as the editor shows it, without the "vscode" module: the
// manager's status pill, the dashboard's page (rendered here, shown by
// dashboard.ts under a strict CSP), the history the dashboard draws (kept
// by the extension: project/status has the last tick only) and the reading
// of an approval stopped by the alignment check.

import type { ManagerExplainResponse, ManagerTickResponse, ProjectDecision, ProjectSettings, ProjectStatusResponse, Run } from "./protocol";

export type ManagerMode = ProjectStatusResponse["mode"];

export const MODE_LABEL: Record<ManagerMode, string> = {
  off: "Off",
  suggest: "Suggest",
  semi_auto: "Semi",
  full_auto: "Full",
};

export const MODE_DESCRIPTION: Record<ManagerMode, string> = {
  off: "the manager does nothing",
  suggest: "says which run it would start; starts nothing",
  semi_auto: "starts runs; their plans and gates wait for you",
  full_auto: "starts runs and approves the plans made of the blueprint's tasks",
};

export type PillState = "off" | "idle" | "running" | "waiting" | "paused" | "budget" | "error";

export interface Pill {
  state: PillState;
  text: string;
  tooltip: string;
  attention: boolean;
}

const PILL_ICON: Record<PillState, string> = {
  off: "$(circle-slash)",
  idle: "$(check)",
  running: "$(sync~spin)",
  waiting: "$(bell-dot)",
  paused: "$(debug-pause)",
  budget: "$(warning)",
  error: "$(error)",
};

/** Runs counted as running (not waiting) and waiting for a human. */
export function runCounts(status: ProjectStatusResponse | undefined, runs: Run[] = []): { running: number; waiting: number } {
  const byStatus = status?.runs ?? {};
  if (!runs.length) return { running: byStatus.running ?? 0, waiting: byStatus.waiting ?? 0 };
  // Under full_auto the manager approves its runs' plans: those wait for it, not for you.
  const forYou = runsWaitingForYou(runs, status);
  const managerWaits = runs.filter((r) => r.status === "waiting").length - forYou;
  return { running: (byStatus.running ?? 0) + managerWaits, waiting: forYou };
}

/** The manager's status bar item: mode and a pill (idle, running N, waiting for you, paused, budget exhausted, error). */
export function managerPill(status: ProjectStatusResponse | undefined, runs: Run[] = [], error?: string): Pill {
  if (error) return { state: "error", text: `${PILL_ICON.error} Manager: error`, tooltip: `The manager: ${error}`, attention: true };
  if (!status) return { state: "off", text: `${PILL_ICON.off} Manager`, tooltip: "No project status yet", attention: false };
  const mode = MODE_LABEL[status.mode] ?? status.mode;
  const { running, waiting } = runCounts(status, runs);
  const tick = status.lastTick;
  let state: PillState;
  let what: string;
  if (status.mode === "off") {
    state = "off";
    what = "off";
  } else if (status.paused) {
    state = "paused";
    what = "paused";
  } else if (tick?.error) {
    state = "error";
    what = "error";
  } else if (waiting > 0) {
    state = "waiting";
    what = waiting > 1 ? `${waiting} waiting for you` : "waiting for you";
  } else if (tick?.result === "budget_exhausted") {
    state = "budget";
    what = "budget exhausted";
  } else if (running > 0) {
    state = "running";
    what = `running ${running}`;
  } else {
    state = "idle";
    what = status.phaseDone ? "phase done" : "idle";
  }
  const lines = [`The manager: ${MODE_LABEL[status.mode]} — ${MODE_DESCRIPTION[status.mode]}`];
  if (status.phase) lines.push(`Phase: ${status.phase}${status.phaseDone ? " (done)" : ""}`);
  if (tick) lines.push(`Last tick: ${tick.result} — ${tick.reason}${tick.error ? ` (${tick.error})` : ""}`);
  const tasks = status.tasks ?? {};
  const total = Object.values(tasks).reduce((a, b) => a + b, 0);
  if (total) lines.push(`Tasks: ${tasks.done ?? 0}/${total} done`);
  lines.push("Click to choose the mode, pause or resume, or the phase.");
  const text = state === "off" ? `${PILL_ICON.off} Manager: Off` : `${PILL_ICON[state]} Manager ${mode}: ${what}`;
  return { state, text, tooltip: lines.join("\n"), attention: state === "waiting" || state === "budget" || state === "error" };
}

/** Runs waiting for you: under full_auto a run waiting for its plan's approval waits for the manager. */
export function runsWaitingForYou(runs: Run[], status: ProjectStatusResponse | undefined): number {
  return runs.filter((r) => r.status === "waiting" && !(status?.mode === "full_auto" && !status.paused && r.waitingFor === "planApproval")).length;
}

/** What the Runs view's badge counts: runs waiting for you, and the manager's suggestion waiting for a yes. */
export function waitingForYou(runsWaiting: number, status: ProjectStatusResponse | undefined): number {
  const suggestion = status?.mode === "suggest" && !status.paused && status.lastTick?.result === "waiting_for_approval" && !status.lastTick.runId ? 1 : 0;
  return runsWaiting + suggestion;
}

/**
 * The runs the manager started after the tick numbered afterSeq, oldest
 * first, from the status's recent ticks: a run's change wakes the
 * manager, so the tick that started a run is often not the last one by
 * the time the status is read. Older servers send no runId in recent;
 * startedRun then reads the last tick alone.
 */
export function startedRuns(status: ProjectStatusResponse, afterSeq: number): { seq: number; runId: string; reason: string }[] {
  return (status.recent ?? [])
    .filter((r) => r.kind === "tick" && r.result === "started_run" && r.runId && r.seq > afterSeq)
    .map((r) => ({ seq: r.seq, runId: r.runId as string, reason: r.reason ?? "" }))
    .sort((a, b) => a.seq - b.seq);
}

/** The newest tick's number among the status's recent ones (0: none). */
export function newestSeq(status: ProjectStatusResponse | undefined): number {
  return Math.max(0, ...(status?.recent ?? []).map((r) => r.seq));
}

/** Whether a tick started a run (the toast "the manager started a run"). */
export function startedRun(prev: ManagerTickResponse | null | undefined, prevAt: number, next: ProjectStatusResponse): string | undefined {
  const t = next.lastTick;
  if (!t || t.result !== "started_run" || !t.runId) return undefined;
  if (prev && prevAt === next.lastTickAtMs && prev.runId === t.runId) return undefined;
  return t.runId;
}

/** What the dashboard remembers between status reads: tasks done over time and the ticks seen. */
export interface ProjectHistory {
  /** [atMs, done, total] samples, one per change. */
  progress: [number, number, number][];
  /** The ticks seen, newest last (seq: the tick's number, from status.recent). */
  ticks: { atMs: number; seq?: number; tick: ManagerTickResponse }[];
}

export const MAX_SAMPLES = 500;
export const MAX_TICKS = 50;

/** Adds what a status says to the history (a sample when the counts changed, a tick when it is new); returns a new history. */
export function recordStatus(h: ProjectHistory, st: ProjectStatusResponse, nowMs: number): ProjectHistory {
  const tasks = st.tasks ?? {};
  const total = Object.values(tasks).reduce((a, b) => a + b, 0);
  const done = tasks.done ?? 0;
  const last = h.progress[h.progress.length - 1];
  const progress = !last || last[1] !== done || last[2] !== total ? [...h.progress, [nowMs, done, total] as [number, number, number]].slice(-MAX_SAMPLES) : h.progress;
  const lastTick = h.ticks[h.ticks.length - 1];
  // Every tick since the last one recorded, from the recent ones: the
  // manager may tick several times between two reads (a run's change
  // wakes it). A server that sends no recent ticks: the last tick alone.
  const recent = (st.recent ?? []).filter((r) => r.kind === "tick" && r.result);
  const lastSeq = Math.max(0, ...h.ticks.map((t) => t.seq ?? 0));
  let ticks = h.ticks;
  if (recent.length) {
    const fresh = recent
      .filter((r) => (lastSeq ? r.seq > lastSeq : r.atMs > (lastTick?.atMs ?? 0)))
      .sort((a, b) => a.seq - b.seq)
      .map((r) => ({
        atMs: r.atMs,
        seq: r.seq,
        tick: { result: r.result as ManagerTickResponse["result"], reason: r.reason ?? "", runId: r.runId, taskIds: r.taskIds, error: r.error },
      }));
    if (fresh.length) ticks = [...h.ticks, ...fresh].slice(-MAX_TICKS);
  } else if (st.lastTick && st.lastTickAtMs && (!lastTick || lastTick.atMs !== st.lastTickAtMs)) {
    ticks = [...h.ticks, { atMs: st.lastTickAtMs, tick: st.lastTick }].slice(-MAX_TICKS);
  }
  return { progress, ticks };
}

export function esc(s: unknown): string {
  return String(s ?? "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** An SVG line chart of tasks done over time (no script, no inline style: the CSP allows neither). */
export function progressChart(samples: [number, number, number][], width = 360, height = 90): string {
  if (!samples.length) return `<p class="muted">No progress recorded yet.</p>`;
  const t0 = samples[0][0];
  const t1 = Math.max(samples[samples.length - 1][0], t0 + 1);
  const max = Math.max(1, ...samples.map((s) => s[2]));
  const x = (t: number) => ((t - t0) / (t1 - t0)) * (width - 8) + 4;
  const y = (v: number) => height - 4 - (v / max) * (height - 8);
  const pts = samples.map((s) => `${x(s[0]).toFixed(1)},${y(s[1]).toFixed(1)}`);
  if (samples.length === 1) pts.push(`${(width - 4).toFixed(1)},${y(samples[0][1]).toFixed(1)}`);
  const last = samples[samples.length - 1];
  return (
    `<svg class="chart" role="img" aria-label="tasks done over time: ${last[1]} of ${last[2]}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">` +
    `<line class="axis" x1="4" y1="${y(max).toFixed(1)}" x2="${width - 4}" y2="${y(max).toFixed(1)}"/>` +
    `<line class="axis" x1="4" y1="${height - 4}" x2="${width - 4}" y2="${height - 4}"/>` +
    `<polyline class="line" points="${pts.join(" ")}"/>` +
    `</svg><div class="muted">${last[1]} of ${last[2]} tasks done</div>`
  );
}

export interface DashboardModel {
  cwd: string;
  status?: ProjectStatusResponse;
  settings?: ProjectSettings;
  explain?: ManagerExplainResponse;
  blueprintTitle?: string;
  phaseTitle?: string;
  decisions: ProjectDecision[];
  runs: Run[];
  history: ProjectHistory;
  /** Open risks and blockers: blocked tasks, proposed decisions, unresolved dependencies. */
  risks: string[];
  error?: string;
}

function counts(title: string, m: Record<string, number> | undefined, order: string[], link?: (k: string) => string): string {
  const keys = [...order.filter((k) => m && k in m), ...Object.keys(m ?? {}).filter((k) => !order.includes(k))];
  if (!keys.length) return `<h3>${esc(title)}</h3><p class="muted">None.</p>`;
  return (
    `<h3>${esc(title)}</h3><ul class="counts">` +
    keys.map((k) => `<li class="count s-${esc(k)}"><span class="n">${esc(m![k])}</span> ${link ? link(k) : esc(k.replace("_", " "))}</li>`).join("") +
    `</ul>`
  );
}

function budgetRow(label: string, spent: number, limit: number | undefined): string {
  if (!limit) return `<tr><td>${esc(label)}</td><td>${esc(spent)}</td><td class="muted">no limit</td></tr>`;
  const pct = Math.min(100, Math.round((spent / limit) * 100));
  return `<tr><td>${esc(label)}</td><td>${esc(spent)} / ${esc(limit)}</td><td><progress max="100" value="${pct}"></progress> ${pct}%</td></tr>`;
}

/** The dashboard's body (inside #root); actions are data-action buttons the page's script posts back. */
export function renderDashboard(m: DashboardModel): string {
  const st = m.status;
  const parts: string[] = [];
  if (m.error) parts.push(`<div class="error" role="alert">${esc(m.error)}</div>`);
  const mode = st ? MODE_LABEL[st.mode] : "—";
  parts.push(
    `<section class="box" id="d-blueprint"><h2>Blueprint</h2>` +
      (st?.blueprintId || m.blueprintTitle
        ? `<p><b>${esc(m.blueprintTitle ?? st?.blueprintId)}</b> <span class="muted">${esc(st?.blueprintId)}</span></p>` +
          `<p>Phase: <b>${esc(m.phaseTitle || st?.phase || "the first unfinished phase")}</b>${st?.phaseDone ? ` <span class="badge done">done</span>` : ""}</p>`
        : `<p class="muted">No active blueprint. <button type="button" data-action="ingest">Ingest Blueprint…</button></p>`) +
      `<p>Manager: <b id="d-mode">${esc(mode)}</b>${st?.paused ? ` <span class="badge paused">paused</span>` : ""} ` +
      `<button type="button" data-action="chooseMode">Mode…</button> ` +
      (st?.paused ? `<button type="button" data-action="resume">Resume</button>` : `<button type="button" data-action="pause">Pause</button>`) +
      ` <button type="button" data-action="choosePhase">Phase…</button> <button type="button" data-action="tick">Tick now</button></p>` +
      progressChart(m.history.progress) +
      `</section>`,
  );
  parts.push(
    `<section class="box" id="d-tasks">` +
      counts("Tasks", st?.tasks, ["planned", "in_progress", "blocked", "done"]) +
      counts("Runs", st?.runs, ["running", "waiting", "paused", "completed", "failed", "cancelled"]) +
      (m.runs.length
        ? `<ul class="runs">` +
          m.runs
            .slice(0, 20)
            .map(
              (r) =>
                `<li class="run s-${esc(r.status)}"><a href="#" data-action="openRun" data-id="${esc(r.id)}">${esc(r.request.slice(0, 80))}</a> ` +
                `<span class="muted">${esc(r.status)}${r.waitingFor ? ` · waiting for ${esc(r.waitingFor)}` : ""} · ${esc(r.counts?.completed ?? 0)}/${esc(r.counts?.total ?? 0)}</span></li>`,
            )
            .join("") +
          `</ul>`
        : "") +
      `</section>`,
  );
  const sp = st?.spend;
  parts.push(
    `<section class="box" id="d-spend"><h2>Spend today</h2><table>` +
      budgetRow("runs", sp?.runs ?? 0, sp?.budget?.runsPerDay) +
      budgetRow("tokens", sp?.tokens ?? 0, sp?.budget?.tokensPerDay) +
      budgetRow("cost (USD)", sp?.cost ?? 0, sp?.budget?.costPerDay) +
      `</table></section>`,
  );
  parts.push(
    `<section class="box" id="d-decisions"><h2>Decisions</h2>` +
      (m.decisions.length
        ? `<ul class="decisions">` +
          m.decisions
            .slice(-15)
            .map(
              (d) =>
                `<li class="decision s-${esc(d.status)}"><b>${esc(d.title)}</b> <span class="muted">${esc(d.status)} · ${esc(d.source)} · ${esc(d.id)}</span>` +
                (d.text ? `<div>${esc(d.text)}</div>` : "") +
                (d.status === "proposed" ? ` <button type="button" data-action="confirmDecision" data-id="${esc(d.id)}">Confirm</button>` : "") +
                (d.status === "active" || d.status === "proposed"
                  ? ` <button type="button" data-action="editDecision" data-id="${esc(d.id)}">Edit</button> <button type="button" class="secondary" data-action="revokeDecision" data-id="${esc(d.id)}">Revoke</button>`
                  : "") +
                `</li>`,
            )
            .join("") +
          `</ul>`
        : `<p class="muted">No decisions yet.</p>`) +
      `<button type="button" data-action="addDecision">Add a decision…</button></section>`,
  );
  parts.push(
    `<section class="box" id="d-risks"><h2>Risks and blockers</h2>` +
      (m.risks.length ? `<ul>${m.risks.map((r) => `<li>⚠ ${esc(r)}</li>`).join("")}</ul>` : `<p class="muted">None open.</p>`) +
      (m.explain?.summary ? `<p class="summary">${esc(m.explain.summary)}</p>` : "") +
      `</section>`,
  );
  parts.push(
    `<section class="box" id="d-ticks"><h2>Last ticks</h2>` +
      (m.history.ticks.length
        ? `<ol class="ticks">` +
          [...m.history.ticks]
            .reverse()
            .slice(0, 10)
            .map(
              (t) =>
                `<li><span class="muted">${esc(new Date(t.atMs).toISOString().slice(11, 19))}</span> <b>${esc(t.tick.result)}</b> — ${esc(t.tick.reason)}` +
                (t.tick.runId ? ` <a href="#" data-action="openRun" data-id="${esc(t.tick.runId)}">run</a>` : "") +
                `</li>`,
            )
            .join("") +
          `</ol>`
        : `<p class="muted">No tick yet.</p>`) +
      `</section>`,
  );
  return parts.join("\n");
}

/** Open risks and blockers from what the dashboard knows. */
export function risksOf(st: ProjectStatusResponse | undefined, decisions: ProjectDecision[], runs: Run[]): string[] {
  const out: string[] = [];
  const blocked = st?.tasks?.blocked ?? 0;
  if (blocked) out.push(`${blocked} task(s) blocked`);
  for (const r of runs) if (r.status === "failed") out.push(`run failed: ${r.request.slice(0, 60)}${r.reason ? ` — ${r.reason}` : ""}`);
  for (const r of runs) if (r.status === "waiting") out.push(`run waits for you (${r.waitingFor ?? "input"}): ${r.request.slice(0, 60)}`);
  for (const d of decisions) if (d.status === "proposed") out.push(`proposed decision to confirm or revoke: ${d.title}`);
  if (st?.lastTick?.result === "budget_exhausted") out.push(`budget exhausted: ${st.lastTick.reason}`);
  if (st?.lastTick?.error) out.push(`last tick failed: ${st.lastTick.error}`);
  return out;
}

/** An approval stopped by the project brain's alignment check, read from its reason (session/brainhook.go). */
export interface AlignmentStop {
  verdict: string;
  decisions: { id: string; title: string }[];
  reasons: string;
}

const DEC = String.raw`dec_[A-Za-z0-9]+ "(?:[^"\\]|\\.)*"`;
const ALIGN_RE = new RegExp(
  String.raw`^The project brain judged this (\w+)(?: against decision (${DEC}(?:, ${DEC})*))?: ([\s\S]*?)(?:\. Approving records a decision that supersedes it\.)?$`,
);

/** The verdict, decisions and reasons of an approval's reason, or undefined when the alignment check did not stop it. */
export function parseAlignmentReason(reason: string | null | undefined): AlignmentStop | undefined {
  if (!reason) return undefined;
  const m = ALIGN_RE.exec(reason.trim());
  if (!m) return undefined;
  const decisions: { id: string; title: string }[] = [];
  if (m[2]) {
    const re = /(dec_[A-Za-z0-9]+) "((?:[^"\\]|\\.)*)"/g;
    let d: RegExpExecArray | null;
    while ((d = re.exec(m[2]))) decisions.push({ id: d[1], title: d[2].replace(/\\(.)/g, "$1") });
  }
  return { verdict: m[1], decisions, reasons: m[3] };
}
