// Runs on the client side, without VS Code: run/* notifications folded into
// the view state, the plan edits (each a whole-plan run/plan/update), the
// dependency graph's Mermaid source, the Runs view's grouping and the
// "Run this" request.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { lib } from "./helpers.mjs";
import { RUN_ID, sampleRun, task, counts } from "./runs-fixture.mjs";

const { initialState, applyEvent, isStoreNotification, isWebviewMessage, applyPlanEdit, planTasksOf, planGraph, groupRuns, runFile, runThisRequest, gatedTask, openClarifications, newTaskId, pullRequestText } = lib;
const n = (method, params) => ({ kind: "notification", method, params });

describe("run notifications", () => {
  test("run/* reach the store", () => {
    for (const m of ["run/started", "run/updated", "run/plan/updated", "run/task/updated", "run/clarification/requested", "run/completed"]) {
      assert.ok(isStoreNotification(m), m);
    }
  });

  test("started, updated, plan, task, clarification, completed", () => {
    const s = initialState();
    const run = sampleRun({ status: "running", stage: "planning", waitingFor: null, plan: { version: 0, summary: "", tasks: [], approved: false } });
    applyEvent(s, n("run/started", { run }));
    assert.equal(s.runs[RUN_ID].stage, "planning");
    assert.equal(s.runsSupported, true);

    const plan = sampleRun().plan;
    applyEvent(s, n("run/plan/updated", { runId: RUN_ID, plan }));
    assert.deepEqual(s.runs[RUN_ID].plan.tasks.map((t) => t.id), ["t1", "t2", "t3"]);

    applyEvent(s, n("run/updated", { runId: RUN_ID, status: "waiting", stage: "planApproval", waitingFor: "planApproval", reason: "the plan waits for approval", currentTaskId: null, counts: counts(plan.tasks) }));
    const r = s.runs[RUN_ID];
    assert.equal(r.status, "waiting");
    assert.equal(r.waitingFor, "planApproval");
    assert.equal(r.counts.total, 3);
    assert.equal(r.branch, run.branch, "fields run/updated does not carry are kept");

    applyEvent(s, n("run/task/updated", { runId: RUN_ID, task: task("t1", "Parse a --shout flag", { status: "completed", commit: "9c1e2f3a4b5c" }) }));
    assert.equal(r.plan.tasks[0].status, "completed");
    assert.equal(r.plan.tasks[0].commit, "9c1e2f3a4b5c");
    assert.equal(r.plan.tasks.length, 3, "a task update replaces, not appends");
    applyEvent(s, n("run/task/updated", { runId: RUN_ID, task: task("t4", "Fix the quoting") }));
    assert.deepEqual(r.plan.tasks.map((t) => t.id), ["t1", "t2", "t3", "t4"]);

    const q = { id: "c1", stage: "planning", question: "Keep -s as a short flag?", context: "greet.sh has -s for silent", options: ["yes", "no"], answer: null, askedAtMs: 1, answeredAtMs: null };
    applyEvent(s, n("run/clarification/requested", { runId: RUN_ID, clarification: q }));
    assert.deepEqual(openClarifications(r).map((c) => c.id), ["c1"]);
    applyEvent(s, n("run/clarification/requested", { runId: RUN_ID, clarification: { ...q, answer: "no", answeredAtMs: 2 } }));
    assert.deepEqual(openClarifications(s.runs[RUN_ID]), [], "an answered clarification is no longer open");
    assert.equal(s.runs[RUN_ID].clarifications.length, 1);

    applyEvent(s, n("run/completed", { run: sampleRun({ status: "completed", stage: "done", waitingFor: null, mergeCommit: "4b7d" }) }));
    assert.equal(s.runs[RUN_ID].status, "completed");
    assert.equal(s.runs[RUN_ID].mergeCommit, "4b7d");
  });

  test("an update for a run the state does not hold changes nothing (the host reads it)", () => {
    const s = initialState();
    applyEvent(s, n("run/updated", { runId: "r-other", status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: "t1", counts: counts([]) }));
    applyEvent(s, n("run/task/updated", { runId: "r-other", task: task("t1", "x") }));
    assert.deepEqual(s.runs, {});
  });

  test("the high-risk gate names the task the run waits on", () => {
    const run = sampleRun({ status: "waiting", stage: "implementation", waitingFor: "taskApproval", currentTaskId: "t3" });
    assert.equal(gatedTask(run).id, "t3");
    assert.equal(gatedTask(sampleRun()), undefined);
  });

  test("run messages from the webview are accepted", () => {
    for (const type of ["runStart", "openRun", "closeRun", "refreshRuns", "runPlanEdit", "runPlanApprove", "runPlanReject", "runTaskDecision", "runClarify", "runRepairApprove", "runAction", "openRunFile"]) {
      assert.ok(isWebviewMessage({ type }), type);
    }
  });
});

describe("plan edits", () => {
  const tasks = () => planTasksOf(sampleRun().plan);

  test("planTasksOf drops the run's progress fields", () => {
    const t = tasks()[0];
    assert.deepEqual(Object.keys(t).sort(), ["acceptance", "dependencies", "description", "estimate", "id", "kind", "risk", "title"]);
  });

  test("edit: title, description, risk, acceptance, dependencies", () => {
    const before = tasks();
    const out = applyPlanEdit(before, {
      op: "edit",
      taskId: "t2",
      patch: { title: "  Shout in capitals ", description: "use tr", risk: "high", dependencies: ["t1", "t2", "nope"], acceptance: { criteria: ["HELLO", " "], checks: ["sh greet.sh --shout a"] } },
    });
    const t2 = out[1];
    assert.equal(t2.title, "Shout in capitals");
    assert.equal(t2.description, "use tr");
    assert.equal(t2.risk, "high");
    assert.deepEqual(t2.dependencies, ["t1"], "no self or unknown dependency");
    assert.deepEqual(t2.acceptance, { criteria: ["HELLO"], checks: ["sh greet.sh --shout a"], files: ["greet.sh"] });
    assert.equal(before[1].title, "Upper-case the greeting", "the input is not changed");
    assert.throws(() => applyPlanEdit(before, { op: "edit", taskId: "t1", patch: { title: " " } }), /title/);
    assert.throws(() => applyPlanEdit(before, { op: "edit", taskId: "t9", patch: { title: "x" } }), /no task t9/);
    assert.throws(() => applyPlanEdit(before, { op: "edit", taskId: "t1", patch: { risk: "extreme" } }), /risk/);
  });

  test("delete drops the task from the others' dependencies", () => {
    const out = applyPlanEdit(tasks(), { op: "delete", taskId: "t2" });
    assert.deepEqual(out.map((t) => t.id), ["t1", "t3"]);
    assert.deepEqual(out[1].dependencies, ["t1"]);
  });

  test("add gets a fresh id and goes where asked", () => {
    const out = applyPlanEdit(tasks(), { op: "add", task: { title: "Document --shout", risk: "low", dependencies: ["t1"] }, afterTaskId: "t1" });
    assert.deepEqual(out.map((t) => t.id), ["t1", "t4", "t2", "t3"]);
    assert.equal(out[1].title, "Document --shout");
    assert.equal(out[1].kind, "file_edit");
    assert.deepEqual(out[1].acceptance, { criteria: [], checks: [], files: [] });
    assert.equal(newTaskId([{ id: "t2" }, { id: "t3" }]), "t4");
    assert.equal(newTaskId([{ id: "t3" }, { id: "t4" }]), "t5");
    assert.throws(() => applyPlanEdit(tasks(), { op: "add", task: { title: "" } }), /title/);
  });

  test("move reorders and stops at the ends", () => {
    assert.deepEqual(applyPlanEdit(tasks(), { op: "move", taskId: "t3", delta: -1 }).map((t) => t.id), ["t1", "t3", "t2"]);
    assert.deepEqual(applyPlanEdit(tasks(), { op: "move", taskId: "t1", delta: -1 }).map((t) => t.id), ["t1", "t2", "t3"]);
    assert.deepEqual(applyPlanEdit(tasks(), { op: "move", taskId: "t1", delta: 5 }).map((t) => t.id), ["t2", "t3", "t1"]);
  });
});

describe("the dependency graph", () => {
  test("a node per task with risk and status, an edge per dependency", () => {
    const src = planGraph(sampleRun().plan, "t2");
    const lines = src.split("\n");
    assert.equal(lines[0], "flowchart TD");
    assert.ok(lines.includes('  n0["t1: Parse a --shout flag<br/>low risk · pending"]'), src);
    assert.ok(lines.includes("  n0 --> n1"));
    assert.ok(lines.includes("  n0 --> n2"));
    assert.ok(lines.includes("  n1 --> n2"));
    assert.ok(lines.includes("  class n0,n1,n2 pending"));
    assert.ok(lines.includes("  class n2 highRisk"));
    assert.ok(lines.includes("  style n1 stroke-width:4px"), "the current task stands out");
  });

  test("labels cannot break out of their quotes", () => {
    const plan = { version: 1, summary: "", approved: false, tasks: [task("a.b-c", 'say "hi" <script>#1\nthen %% end', { status: "running" })] };
    const src = planGraph(plan);
    assert.match(src, /n0\["a\.b-c: say #quot;hi#quot; #lt;script#gt;#35;1 then %% end<br\/>low risk · running"\]/);
    assert.ok(!/<script>/.test(src));
  });
});

describe("the Runs view and Run this", () => {
  test("runs grouped by status, waiting first, newest first", () => {
    const runs = [
      sampleRun({ id: "a", status: "completed", createdAtMs: 1 }),
      sampleRun({ id: "b", status: "waiting", createdAtMs: 2 }),
      sampleRun({ id: "c", status: "running", createdAtMs: 3 }),
      sampleRun({ id: "d", status: "completed", createdAtMs: 4 }),
    ];
    const g = groupRuns(runs);
    assert.deepEqual(g.map((x) => x.group), ["waiting", "running", "completed"]);
    assert.deepEqual(g[2].runs.map((r) => r.id), ["d", "a"]);
  });

  test("state.md and plan.md live under .apserver/runs/<id>/", () => {
    assert.equal(runFile(RUN_ID, "state.md"), `.apserver/runs/${RUN_ID}/state.md`);
  });

  test("the request carries the selection or names the file", () => {
    const sel = runThisRequest("make it shout", { path: "greet.sh", languageId: "shellscript", startLine: 2, endLine: 3, text: "echo hi\necho ```x```\n" });
    assert.equal(sel, "make it shout\n\nIn `greet.sh` lines 2-3:\n\n````shellscript\necho hi\necho ```x```\n````");
    assert.equal(runThisRequest("add tests", { path: "src/a.ts" }), "add tests\n\nThe file: `src/a.ts`.");
  });

  test("a run's pull request: run/updated carries it into the state, and it reads as link, checks and unresolved comments", () => {
    const s = initialState();
    applyEvent(s, { kind: "runList", runs: [sampleRun()] });
    const pr = { number: 12, url: "https://github.com/acme/greet/pull/12", state: "open", headSha: "9c1e2f3", checks: { state: "failed", summary: "1 of 3 checks failed: lint" }, unresolvedComments: 2 };
    applyEvent(s, n("run/updated", { runId: RUN_ID, status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: null, counts: counts([]), pullRequest: pr }));
    assert.deepEqual(s.runs[RUN_ID].pullRequest, pr);
    assert.equal(pullRequestText(pr), "#12 open · checks failed · 2 unresolved comments");
    assert.equal(pullRequestText({ ...pr, state: "merged", checks: { state: "", summary: "" }, unresolvedComments: 1 }), "#12 merged · 1 unresolved comment");
    assert.equal(pullRequestText({ ...pr, checks: { state: "actionRequired", summary: "" }, unresolvedComments: 0 }), "#12 open · checks need action · no unresolved comments");
    applyEvent(s, n("run/updated", { runId: RUN_ID, status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: null, counts: counts([]) }));
    assert.deepEqual(s.runs[RUN_ID].pullRequest, pr, "a run/updated without the field keeps it");
  });
});
