// Runs (apserver's run/* extension) on the client side: how run
// notifications fold into the view state, the plan edits the panel offers
// (each one becomes a whole-plan run/plan/update), the plan's dependency
// graph as Mermaid source, and the grouping of the Runs view. No "vscode"
// and no DOM imports: the extension host, the webview and the Node tests all
// use it.

import type {
  RunAutonomy as Autonomy,
  RunPlanTask as PlanTask,
  Run,
  RunClarification,
  RunPlan,
  RunStatus,
  RunTask,
  RunTrust,
  RunTaskAcceptance as TaskAcceptance,
  RunTaskRisk as TaskRisk,
  ServerNotificationMethod,
} from "./protocol";

/** The part of the view state that runs own. */
export interface RunsSlice {
  runs: Record<string, Run>;
  /** The run the panel shows instead of a thread (null: the thread view). */
  activeRunId: string | null;
  /** null: not known yet; false: the server has no run/* methods. */
  runsSupported: boolean | null;
}

/** Methods of runs that the store folds in. */
export function isRunNotification(method: string): boolean {
  return method.startsWith("run/");
}

function upsertTask(plan: RunPlan, task: RunTask): void {
  const i = plan.tasks.findIndex((t) => t.id === task.id);
  if (i >= 0) plan.tasks[i] = task;
  else plan.tasks.push(task);
}

function upsertClarification(run: Run, c: RunClarification): void {
  const list = run.clarifications ?? (run.clarifications = []);
  const i = list.findIndex((x) => x.id === c.id);
  if (i >= 0) list[i] = c;
  else list.push(c);
}

/**
 * Applies a run/* notification. Returns the id of a run the notification
 * named but the state does not hold (the caller reads it with run/read),
 * else null.
 */
export function applyRunNotification(s: RunsSlice, method: string, p: any): { changed: boolean; unknownRunId: string | null } {
  const known = (id: unknown): Run | undefined => (typeof id === "string" ? s.runs[id] : undefined);
  // Typed so that tsc rejects a case that names no notification of the schemas.
  switch (method as ServerNotificationMethod) {
    case "run/started":
    case "run/completed":
      if (!p?.run || typeof p.run.id !== "string") return { changed: false, unknownRunId: null };
      s.runs[p.run.id] = p.run;
      s.runsSupported = true;
      return { changed: true, unknownRunId: null };
    case "run/updated": {
      const run = known(p?.runId);
      if (!run) return { changed: false, unknownRunId: typeof p?.runId === "string" ? p.runId : null };
      run.status = p.status ?? run.status;
      run.stage = p.stage ?? run.stage;
      if (p.waitingFor !== undefined) run.waitingFor = p.waitingFor;
      if (p.reason !== undefined) run.reason = p.reason;
      if (p.currentTaskId !== undefined) run.currentTaskId = p.currentTaskId;
      if (p.counts) run.counts = p.counts;
      if (p.pullRequest !== undefined) run.pullRequest = p.pullRequest;
      return { changed: true, unknownRunId: null };
    }
    case "run/plan/updated": {
      const run = known(p?.runId);
      if (!run) return { changed: false, unknownRunId: typeof p?.runId === "string" ? p.runId : null };
      if (p.plan) run.plan = p.plan;
      return { changed: true, unknownRunId: null };
    }
    case "run/task/updated": {
      const run = known(p?.runId);
      if (!run) return { changed: false, unknownRunId: typeof p?.runId === "string" ? p.runId : null };
      if (p.task && typeof p.task.id === "string") upsertTask(run.plan, p.task);
      return { changed: true, unknownRunId: null };
    }
    case "run/clarification/requested": {
      const run = known(p?.runId);
      if (!run) return { changed: false, unknownRunId: typeof p?.runId === "string" ? p.runId : null };
      if (p.clarification && typeof p.clarification.id === "string") upsertClarification(run, p.clarification);
      return { changed: true, unknownRunId: null };
    }
  }
  return { changed: false, unknownRunId: null };
}

// ---------- plan edits ----------

/** One edit of a plan waiting for approval. Every edit is sent as the whole plan (run/plan/update). */
export type PlanEdit =
  | {
      op: "edit";
      taskId: string;
      patch: Partial<Pick<PlanTask, "title" | "description" | "kind" | "risk" | "dependencies" | "estimate">> & {
        acceptance?: Partial<TaskAcceptance>;
      };
    }
  | { op: "delete"; taskId: string }
  | { op: "add"; task: Partial<PlanTask> & { title: string }; afterTaskId?: string | null }
  | { op: "move"; taskId: string; delta: number };

const RISKS: readonly TaskRisk[] = ["low", "medium", "high"];

/** A plan's tasks as a client writes them back (no status, retries, threads or commits). */
export function planTasksOf(plan: RunPlan): PlanTask[] {
  return (plan.tasks ?? []).map((t) => ({
    id: t.id,
    title: t.title,
    description: t.description ?? "",
    kind: t.kind ?? "file_edit",
    dependencies: [...(t.dependencies ?? [])],
    risk: t.risk,
    acceptance: {
      criteria: [...(t.acceptance?.criteria ?? [])],
      checks: [...(t.acceptance?.checks ?? [])],
      files: [...(t.acceptance?.files ?? [])],
    },
    estimate: t.estimate ?? "",
  }));
}

/** A task id not yet in the list: t1, t2, … */
export function newTaskId(tasks: PlanTask[]): string {
  const ids = new Set(tasks.map((t) => t.id));
  for (let n = tasks.length + 1; ; n++) if (!ids.has(`t${n}`)) return `t${n}`;
}

function cleanList(xs: unknown): string[] {
  return Array.isArray(xs) ? xs.map((x) => String(x).trim()).filter((x) => x !== "") : [];
}

/**
 * Applies an edit and returns the new task list (the input is not
 * changed). Deleting a task drops it from the others' dependencies;
 * dependencies on unknown tasks are dropped. Throws on an edit that names
 * no task of the plan or leaves a title empty.
 */
export function applyPlanEdit(tasks: PlanTask[], e: PlanEdit): PlanTask[] {
  const out = tasks.map((t) => ({ ...t, dependencies: [...t.dependencies], acceptance: { ...t.acceptance } }));
  const index = (id: string) => {
    const i = out.findIndex((t) => t.id === id);
    if (i < 0) throw new Error(`the plan has no task ${id}`);
    return i;
  };
  switch (e.op) {
    case "edit": {
      const i = index(e.taskId);
      const t = out[i];
      const p = e.patch;
      if (p.title !== undefined) t.title = p.title.trim();
      if (p.description !== undefined) t.description = p.description;
      if (p.kind !== undefined) t.kind = p.kind.trim() || t.kind;
      if (p.estimate !== undefined) t.estimate = p.estimate;
      if (p.risk !== undefined) {
        if (!RISKS.includes(p.risk)) throw new Error(`risk must be low, medium or high, not ${p.risk}`);
        t.risk = p.risk;
      }
      if (p.dependencies !== undefined) t.dependencies = cleanList(p.dependencies).filter((d) => d !== t.id);
      if (p.acceptance) {
        if (p.acceptance.criteria !== undefined) t.acceptance.criteria = cleanList(p.acceptance.criteria);
        if (p.acceptance.checks !== undefined) t.acceptance.checks = cleanList(p.acceptance.checks);
        if (p.acceptance.files !== undefined) t.acceptance.files = cleanList(p.acceptance.files);
      }
      if (t.title === "") throw new Error("a task needs a title");
      break;
    }
    case "delete": {
      const i = index(e.taskId);
      out.splice(i, 1);
      for (const t of out) t.dependencies = t.dependencies.filter((d) => d !== e.taskId);
      break;
    }
    case "add": {
      const title = (e.task.title ?? "").trim();
      if (title === "") throw new Error("a task needs a title");
      const id = e.task.id && !out.some((t) => t.id === e.task.id) ? e.task.id : newTaskId(out);
      const t: PlanTask = {
        id,
        title,
        description: e.task.description ?? "",
        kind: e.task.kind ?? "file_edit",
        dependencies: cleanList(e.task.dependencies),
        risk: e.task.risk && RISKS.includes(e.task.risk) ? e.task.risk : "low",
        acceptance: {
          criteria: cleanList(e.task.acceptance?.criteria),
          checks: cleanList(e.task.acceptance?.checks),
          files: cleanList(e.task.acceptance?.files),
        },
        estimate: e.task.estimate ?? "",
      };
      const at = e.afterTaskId ? index(e.afterTaskId) + 1 : out.length;
      out.splice(at, 0, t);
      break;
    }
    case "move": {
      const i = index(e.taskId);
      const j = Math.max(0, Math.min(out.length - 1, i + Math.trunc(e.delta)));
      const [t] = out.splice(i, 1);
      out.splice(j, 0, t);
      break;
    }
  }
  const ids = new Set(out.map((t) => t.id));
  for (const t of out) t.dependencies = t.dependencies.filter((d) => ids.has(d));
  return out;
}

// ---------- the dependency graph ----------

/** Mermaid's entity codes for what would end a quoted label. */
function mermaidText(s: string): string {
  return s
    .replace(/[\r\n]+/g, " ")
    .replace(/#/g, "#35;")
    .replace(/"/g, "#quot;")
    .replace(/</g, "#lt;")
    .replace(/>/g, "#gt;");
}

function short(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

/**
 * The plan's dependency graph as a Mermaid flowchart: one node per task
 * (title, risk, status), an edge from each dependency to its dependent,
 * a class per status and a thicker border for high risk. Node names are
 * positional (n0, n1, …): task ids may hold characters Mermaid reads as
 * syntax.
 */
export function planGraph(plan: RunPlan, currentTaskId?: string | null): string {
  const tasks = plan.tasks ?? [];
  const node = new Map(tasks.map((t, i) => [t.id, `n${i}`]));
  const lines = ["flowchart TD"];
  for (const t of tasks) {
    const label = `${mermaidText(t.id)}: ${mermaidText(short(t.title, 48))}<br/>${t.risk} risk · ${t.status ?? "pending"}`;
    lines.push(`  ${node.get(t.id)}["${label}"]`);
  }
  for (const t of tasks) {
    for (const d of t.dependencies ?? []) {
      const from = node.get(d);
      if (from) lines.push(`  ${from} --> ${node.get(t.id)}`);
    }
  }
  const byStatus = new Map<string, string[]>();
  for (const t of tasks) {
    const st = t.status ?? "pending";
    byStatus.set(st, [...(byStatus.get(st) ?? []), node.get(t.id)!]);
  }
  const classes: Record<string, string> = {
    pending: "fill:#3a3d41,stroke:#8b8b8b,color:#e0e0e0",
    approved: "fill:#264f78,stroke:#4a90d9,color:#ffffff",
    running: "fill:#0e639c,stroke:#3794ff,color:#ffffff",
    completed: "fill:#2d5a34,stroke:#73c991,color:#ffffff",
    failed: "fill:#7a2e22,stroke:#f48771,color:#ffffff",
    blocked: "fill:#7a5a12,stroke:#cca700,color:#ffffff",
    skipped: "fill:#2b2b2b,stroke:#6c6c6c,color:#9d9d9d",
  };
  for (const [st, nodes] of byStatus) {
    const cls = classes[st] ? st : "pending";
    lines.push(`  classDef ${cls} ${classes[cls]}`);
    lines.push(`  class ${nodes.join(",")} ${cls}`);
  }
  const high = tasks.filter((t) => t.risk === "high").map((t) => node.get(t.id)!);
  if (high.length) {
    lines.push("  classDef highRisk stroke-width:3px,stroke-dasharray:4 2");
    lines.push(`  class ${high.join(",")} highRisk`);
  }
  if (currentTaskId && node.has(currentTaskId)) lines.push(`  style ${node.get(currentTaskId)} stroke-width:4px`);
  return lines.join("\n");
}

// ---------- the Runs view ----------

export type RunGroup = "waiting" | "running" | "paused" | "completed" | "failed" | "cancelled";

export const RUN_GROUPS: { group: RunGroup; label: string }[] = [
  { group: "waiting", label: "Waiting on you" },
  { group: "running", label: "Running" },
  { group: "paused", label: "Paused" },
  { group: "completed", label: "Completed" },
  { group: "failed", label: "Failed" },
  { group: "cancelled", label: "Cancelled" },
];

export function runGroup(run: Pick<Run, "status">): RunGroup {
  const s: RunStatus = run.status;
  return s === "waiting" || s === "running" || s === "paused" || s === "completed" || s === "failed" || s === "cancelled" ? s : "running";
}

/** A run's one-line label: its request's first line. */
export function runLabel(run: Pick<Run, "request" | "id">): string {
  const first = (run.request ?? "").split("\n").find((l) => l.trim() !== "")?.trim() ?? run.id;
  return short(first, 80);
}

const STAGE_TEXT: Record<string, string> = {
  planning: "planning",
  planApproval: "plan approval",
  implementation: "implementing",
  validation: "validating",
  merge: "merging",
  done: "done",
};

const WAITING_TEXT: Record<string, string> = {
  planApproval: "the plan waits for approval",
  taskApproval: "a high-risk task waits for approval",
  clarification: "a question waits for an answer",
  repair: "a blocked task waits for a repair",
  resume: "waits to be resumed",
  taskThread: "waits on its task's thread",
};

export function stageText(stage: string): string {
  return STAGE_TEXT[stage] ?? stage;
}

export function waitingText(w: string | null | undefined): string {
  return w ? WAITING_TEXT[w] ?? w : "";
}

/** A run's short progress: "implementing · 2/5 tasks". */
export function runProgress(run: Run): string {
  const c = run.counts;
  const tasks = c && c.total > 0 ? ` · ${c.completed}/${c.total} tasks` : "";
  return `${stageText(run.stage)}${tasks}`;
}

/** Runs in the Runs view's order: newest first within each group. */
export function groupRuns(runs: Run[]): { group: RunGroup; label: string; runs: Run[] }[] {
  return RUN_GROUPS.map((g) => ({
    ...g,
    runs: runs.filter((r) => runGroup(r) === g.group).sort((a, b) => (b.createdAtMs ?? 0) - (a.createdAtMs ?? 0)),
  })).filter((g) => g.runs.length > 0);
}

/** The files a run writes in its worktree (state.md, plan.md), relative to the worktree. */
export function runFile(runId: string, file: "state.md" | "plan.md"): string {
  return `.apserver/runs/${runId}/${file}`;
}

/** The task a run waits on at its high-risk gate, if it does. */
export function gatedTask(run: Run): RunTask | undefined {
  if (run.waitingFor !== "taskApproval") return undefined;
  const tasks = run.plan?.tasks ?? [];
  return tasks.find((t) => t.id === run.currentTaskId) ?? tasks.find((t) => t.risk === "high" && t.status === "pending");
}

/** Clarifications not answered yet. */
export function openClarifications(run: Run): RunClarification[] {
  return (run.clarifications ?? []).filter((c) => c.answer === null || c.answer === undefined);
}

// ---------- starting a run from the editor ----------

/** The ways "Run this" offers to run: trust per stage and autonomy. */
export const RUN_PRESETS: { label: string; detail: string; trust: Partial<RunTrust>; autonomy: Autonomy }[] = [
  {
    label: "Review the plan first",
    detail: "You approve the plan; tasks then run on their own (full auto), high-risk ones ask.",
    trust: { planning: "manual", implementation: "auto", fixes: "auto" },
    autonomy: "full_auto",
  },
  {
    label: "Ask before changes",
    detail: "You approve the plan; reads and allowed checks run, every write asks (semi auto).",
    trust: { planning: "manual", implementation: "auto", fixes: "manual" },
    autonomy: "semi_auto",
  },
  {
    label: "Plan only",
    detail: "The planner writes a plan for you to review; nothing is implemented.",
    trust: { planning: "manual" },
    autonomy: "off",
  },
  {
    label: "Fully automatic",
    detail: "Plan, implement and fix without stopping (high-risk tasks and forbidden rules still ask).",
    trust: { planning: "auto", implementation: "auto", fixes: "auto" },
    autonomy: "full_auto",
  },
];

/** What "Run this" sends as the run's request: the instruction and the code it is about. */
export function runThisRequest(
  instruction: string,
  target: { path: string; languageId?: string; startLine?: number; endLine?: number; text?: string },
): string {
  const what = instruction.trim();
  if (target.text === undefined || target.text === "") return `${what}\n\nThe file: \`${target.path}\`.`;
  let ticks = "```";
  while (target.text.includes(ticks)) ticks += "`";
  const lines = target.startLine === target.endLine ? `line ${target.startLine}` : `lines ${target.startLine}-${target.endLine}`;
  return `${what}\n\nIn \`${target.path}\` ${lines}:\n\n${ticks}${target.languageId ?? ""}\n${target.text.replace(/\n$/, "")}\n${ticks}`;
}

/** The run's pull request as a person reads it: "#12 open · checks passed · 2 unresolved comments". */
export function pullRequestText(pr: NonNullable<Run["pullRequest"]>): string {
  const checks = pr.checks?.state ? `checks ${pr.checks.state === "actionRequired" ? "need action" : pr.checks.state}` : "";
  const comments = pr.unresolvedComments ? `${pr.unresolvedComments} unresolved comment${pr.unresolvedComments === 1 ? "" : "s"}` : "no unresolved comments";
  return [`#${pr.number} ${pr.state}`, checks, comments].filter(Boolean).join(" · ");
}
