#!/usr/bin/env node
// A stand-in apserver for the host-side runs tests: it speaks just enough
// of the protocol (initialize, thread/list, fullAuto/status, run/*) over
// stdio, logs every request to $FAKE_LOG (JSON lines) and answers runs from
// the fixture. The real server's runs are tested by the e2e suite and, in a
// real VS Code, by realtest/runs.test.mjs.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { RUN_ID, sampleRun, task, counts } from "./runs-fixture.mjs";

if (process.argv.includes("--version") || process.argv.includes("version")) {
  console.log("apserver fake-runs 0.0.0");
  process.exit(0);
}
const cwd = process.env.FAKE_CWD ?? "/nowhere";
const worktree = process.env.FAKE_WORKTREE ?? "/nowhere";
const runs = new Map([
  [RUN_ID, sampleRun({ cwd, worktree })],
  ["r-other-repo", sampleRun({ id: "r-other-repo", cwd: "/somewhere/else", worktree: "/somewhere/else/wt" })],
]);
const out = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const notify = (method, params) => out({ method, params });
const log = (m) => process.env.FAKE_LOG && appendFileSync(process.env.FAKE_LOG, JSON.stringify(m) + "\n");

function answer(method, p) {
  const run = p?.runId ? runs.get(p.runId) : undefined;
  if (method.startsWith("run/") && method !== "run/list" && method !== "run/start" && !run) {
    throw { code: -32600, message: `run not found: ${p?.runId}` };
  }
  switch (method) {
    case "initialize":
      return { userAgent: "apserver-fake-runs/0" };
    case "thread/list":
      return { data: [], nextCursor: null };
    case "fullAuto/status":
      return { runs: [], attention: { count: 0, oldestSinceMs: null, items: [] } };
    case "run/list":
      return { runs: [...runs.values()] };
    case "run/read":
      return { run };
    case "run/start": {
      const r = sampleRun({ id: "r-new", request: p.request, cwd: p.cwd, worktree, status: "running", stage: "planning", waitingFor: null, plan: { version: 0, summary: "", tasks: [], approved: false }, counts: counts([]) });
      runs.set(r.id, r);
      setImmediate(() => notify("run/started", { run: r }));
      return { run: r };
    }
    case "run/plan/update":
      run.plan = { ...run.plan, version: run.plan.version + 1, tasks: p.tasks.map((t) => ({ ...task(t.id, t.title), ...t, status: "pending" })) };
      run.counts = counts(run.plan.tasks);
      setImmediate(() => notify("run/plan/updated", { runId: run.id, plan: run.plan }));
      return { run };
    case "run/plan/approve": {
      Object.assign(run, { status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: run.plan.tasks[0].id });
      run.plan.approved = true;
      const t = { ...run.plan.tasks[0], status: "running", threadId: "th-task-1" };
      run.plan.tasks[0] = t;
      setImmediate(() => {
        notify("run/task/updated", { runId: run.id, task: t });
        // A run this window has not seen: the extension reads it.
        notify("run/updated", { runId: "r-elsewhere", status: "running", stage: "planning", waitingFor: null, reason: null, currentTaskId: null, counts: counts([]) });
      });
      return { run };
    }
    case "run/pause":
      Object.assign(run, { status: "paused", waitingFor: "resume" });
      return { run };
    case "run/cancel":
      Object.assign(run, { status: "cancelled", stage: "done", waitingFor: null });
      return { run };
    case "run/plan/reject":
    case "run/task/approve":
    case "run/clarification/answer":
    case "run/repair/approve":
    case "run/resume":
      return { run };
  }
  throw { code: -32601, message: `method not found: ${method}` };
}

const later = new Map([["r-elsewhere", () => sampleRun({ id: "r-elsewhere", request: "started in another window", status: "running", stage: "planning", waitingFor: null, cwd, worktree })]]);

createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.id === undefined || !m.method) return; // notifications and responses
  log({ method: m.method, params: m.params });
  if (m.method === "run/read" && later.has(m.params?.runId)) runs.set(m.params.runId, later.get(m.params.runId)());
  try {
    out({ id: m.id, result: answer(m.method, m.params) });
  } catch (e) {
    out({ id: m.id, error: { code: e.code ?? -32603, message: e.message ?? String(e) } });
  }
});
process.stdin.on("end", () => process.exit(0));
