// The run view of the panel in headless Chromium, under the panel's own
// HTML and CSP: the plan as a tree and as a Mermaid graph (dist/mermaid.js,
// loaded only once a plan is shown), the edit controls and what they post,
// the gates, progress and the Run button.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { extDir, lib, tempDir } from "./helpers.mjs";
import { RUN_ID, sampleRun, task, counts } from "./runs-fixture.mjs";

const { renderWebviewHtml, makeNonce, initialState, applyEvent } = lib;
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SHOT_DIR = join(extDir, "test-results");
const n = (method, params) => ({ kind: "notification", method, params });

function readyState() {
  const s = initialState();
  applyEvent(s, { kind: "connection", state: "ready", message: null, version: "apserver/test" });
  return s;
}

describe("the run view in headless Chromium", () => {
  let server, origin, context, page, profile;
  const requests = [];
  const consoleCsp = [];
  const pageErrors = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium)`);
    const nonce = makeNonce();
    const files = { "/dist/webview.js": "text/javascript", "/dist/webview.css": "text/css", "/dist/mermaid.js": "text/javascript" };
    server = createServer((req, res) => {
      const path = new URL(req.url, "http://x").pathname;
      requests.push(path);
      if (path === "/") {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(renderWebviewHtml({ cspSource: origin, nonce, scriptUri: `${origin}/dist/webview.js`, styleUri: `${origin}/dist/webview.css` }));
        return;
      }
      if (!files[path]) return res.writeHead(404).end();
      res.writeHead(200, { "content-type": files[path], "cache-control": "no-store" });
      res.end(readFileSync(join(extDir, path)));
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    origin = `http://127.0.0.1:${server.address().port}`;
    profile = tempDir("apserver-chromium-");
    context = await chromium.launchPersistentContext(profile.path, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
      viewport: { width: 460, height: 1100 },
      deviceScaleFactor: 1,
    });
    await context.addInitScript(() => {
      window.__posted = [];
      window.__csp = [];
      document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample ?? ""}`));
      window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(JSON.parse(JSON.stringify(m))), getState: () => undefined, setState: () => {} });
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) consoleCsp.push(m.text());
    });
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => window.__posted.some((m) => m.type === "ready"));
  });

  after(async () => {
    await context?.close();
    server?.close();
    profile?.remove();
  });

  const send = (msg) => page.evaluate((m) => window.postMessage(m, "*"), msg);
  const events = (evs) => send({ type: "events", events: evs });
  const lastPosted = (type) => page.evaluate((t) => window.__posted.filter((m) => m.type === t).pop() ?? null, type);
  const clearPosted = () => page.evaluate(() => (window.__posted = []));

  test("Mermaid is not loaded until a plan is shown", async () => {
    await send({ type: "snapshot", state: readyState() });
    await page.waitForFunction(() => document.getElementById("conn").classList.contains("conn-ready"));
    assert.equal(await page.locator("#run").isHidden(), true);
    assert.ok(!requests.includes("/dist/mermaid.js"), "mermaid.js fetched before any plan");
  });

  test("the Run button posts the composer's text with the chosen trust and autonomy", async () => {
    await page.locator("#composer").fill("add a shout option to greet.sh");
    await page.locator("#run-options summary").click();
    await page.locator("#ro-planning").selectOption("manual");
    await page.locator("#ro-autonomy").selectOption("semi_auto");
    await page.getByRole("button", { name: "▶ Run" }).click();
    assert.deepEqual(await lastPosted("runStart"), { type: "runStart", request: "add a shout option to greet.sh", trust: { planning: "manual" }, autonomy: "semi_auto" });
    assert.equal(await page.locator("#composer").inputValue(), "");
  });

  test("a plan waiting for approval: the tree with risk, status and dependencies, and the graph", async () => {
    const s = readyState();
    applyEvent(s, { kind: "run", run: sampleRun() });
    applyEvent(s, { kind: "activeRun", runId: RUN_ID });
    await send({ type: "snapshot", state: s });
    await page.locator("#run-tasks .task").first().waitFor();
    assert.equal(await page.locator("#conversation").isHidden(), true, "the run replaces the conversation");
    assert.equal(await page.locator("#run-status").textContent(), "waiting on you");
    assert.match(await page.locator("#run-branch").textContent(), /^apserver\/5f2c9a1b-/);
    assert.equal(await page.locator("#run-stages .stage-current").textContent(), "plan approval");
    const rows = page.locator("#run-tasks > .task");
    assert.equal(await rows.count(), 3);
    const t3 = page.locator('#run-tasks > .task[data-task-id="t3"]');
    assert.match(await t3.locator(".task-title").textContent(), /t3\s+Rewrite the release script/);
    assert.equal(await t3.locator(".risk-high").textContent(), "high");
    assert.equal(await t3.locator(".task-st").textContent(), "pending");
    assert.equal(await t3.locator(".task-deps").textContent(), "after t1, t2");
    assert.equal(await page.locator("#run-plan-approval").count(), 1);
    // The graph: Mermaid fetched now, drawn as SVG, one node per task and one edge per dependency.
    await page.locator('#run-graph[data-state="drawn"] svg').waitFor({ timeout: 30000 });
    assert.ok(requests.includes("/dist/mermaid.js"));
    assert.equal(await page.locator("#run-graph svg .node").count(), 3);
    assert.equal(await page.locator("#run-graph svg .edgePaths path").count(), 3);
    // Mermaid wraps labels into lines (tspans): compare without the spaces.
    const label = (await page.locator("#run-graph svg").textContent()).replace(/\s+/g, "");
    assert.match(label, /t3:Rewritethereleasescript/);
    assert.match(label, /highrisk·pending/);
    // Mermaid's styles apply (a constructed sheet; the CSP has no unsafe-inline).
    const fill = await page.locator("#run-graph svg .node.pending rect, #run-graph svg .node rect").first().evaluate((el) => getComputedStyle(el).fill);
    assert.equal(fill, "rgb(58, 61, 65)", "the pending class's fill");
    mkdirSync(SHOT_DIR, { recursive: true });
    await page.screenshot({ path: join(SHOT_DIR, "vscode-run-plan.png") });
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(await page.evaluate(() => window.__csp), [], "CSP violations");
    assert.deepEqual(consoleCsp, []);
  });

  test("editing the plan posts one edit at a time", async () => {
    await clearPosted();
    const t2 = page.locator('#run-tasks > .task[data-task-id="t2"]');
    await t2.getByRole("button", { name: "edit" }).click();
    await page.locator("#tf-title").fill("Shout in capitals");
    await page.locator("#tf-risk").selectOption("high");
    await page.locator("#tf-criteria").fill("HELLO, BOB\nexit 0");
    await page.getByRole("button", { name: "Save" }).click();
    assert.deepEqual(await lastPosted("runPlanEdit"), {
      type: "runPlanEdit",
      runId: RUN_ID,
      edit: {
        op: "edit",
        taskId: "t2",
        patch: {
          title: "Shout in capitals",
          description: "Do upper-case the greeting.",
          risk: "high",
          dependencies: ["t1"],
          acceptance: { criteria: ["HELLO, BOB", "exit 0"], checks: ["sh greet.sh --shout bob | grep -q 'HELLO, BOB'"], files: ["greet.sh"] },
        },
      },
    });
    assert.equal(await page.locator(".task-form").count(), 0, "the form closes");
    await page.locator('#run-tasks > .task[data-task-id="t3"]').getByRole("button", { name: "Move up" }).click();
    assert.deepEqual((await lastPosted("runPlanEdit")).edit, { op: "move", taskId: "t3", delta: -1 });
    await page.locator('#run-tasks > .task[data-task-id="t1"]').getByRole("button", { name: "delete" }).click();
    assert.deepEqual((await lastPosted("runPlanEdit")).edit, { op: "delete", taskId: "t1" });
    await page.getByRole("button", { name: "+ add a task" }).click();
    await page.locator("#tf-title").fill("Document --shout");
    await page.locator("#tf-deps").fill("t1, t2");
    await page.getByRole("button", { name: "Add task" }).click();
    const add = (await lastPosted("runPlanEdit")).edit;
    assert.equal(add.op, "add");
    assert.equal(add.afterTaskId, "t3");
    assert.equal(add.task.title, "Document --shout");
    assert.deepEqual(add.task.dependencies, ["t1", "t2"]);
    // The host answers with run/plan/updated: the tree follows.
    const run = sampleRun();
    run.plan.tasks.splice(1, 1, { ...run.plan.tasks[1], title: "Shout in capitals", risk: "high" });
    await events([n("run/plan/updated", { runId: RUN_ID, plan: { ...run.plan, version: 2 } })]);
    await page.waitForFunction(() => document.querySelector('#run-tasks > .task[data-task-id="t2"] .task-title')?.textContent.includes("Shout in capitals"));
    await page.waitForFunction(() => document.getElementById("run-graph")?.dataset.src?.includes("Shout in capitals"), null, { timeout: 15000 });
  });

  test("approve all, or send back with feedback", async () => {
    await page.getByRole("button", { name: "Send back" }).click();
    assert.equal(await lastPosted("runPlanReject"), null, "no feedback, nothing sent");
    await page.locator("#run-feedback").fill("split t3 in two");
    await page.getByRole("button", { name: "Send back" }).click();
    assert.deepEqual(await lastPosted("runPlanReject"), { type: "runPlanReject", runId: RUN_ID, feedback: "split t3 in two" });
    await page.getByRole("button", { name: "Approve plan" }).click();
    assert.deepEqual(await lastPosted("runPlanApprove"), { type: "runPlanApprove", runId: RUN_ID });
  });

  test("progress, the high-risk gate, a clarification and the files", async () => {
    const tasks = sampleRun().plan.tasks;
    tasks[0] = { ...tasks[0], status: "completed", commit: "9c1e2f3a4b5c6d7e" };
    tasks[1] = { ...tasks[1], status: "completed", commit: "1a2b3c4d5e6f7081" };
    await events([
      n("run/updated", { runId: RUN_ID, status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: "t1", counts: counts(tasks) }),
      n("run/task/updated", { runId: RUN_ID, task: tasks[0] }),
      n("run/task/updated", { runId: RUN_ID, task: tasks[1] }),
      n("run/updated", { runId: RUN_ID, status: "waiting", stage: "implementation", waitingFor: "taskApproval", reason: "t3 is high risk", currentTaskId: "t3", counts: counts(tasks) }),
    ]);
    await page.locator("#run-gate").waitFor();
    assert.equal(await page.locator("#run-plan-approval").count(), 0, "no plan editing once approved");
    assert.equal(await page.locator(".task-tools").count(), 0);
    assert.equal(await page.locator("#run-stages .stage-current").textContent(), "implementing");
    assert.equal(await page.locator("#run-count").textContent(), "2/3 tasks done");
    assert.match(await page.locator("#run-commits").textContent(), /9c1e2f3a t1: Parse a --shout flag/);
    assert.match(await page.locator("#run-gate").textContent(), /t3: Rewrite the release script/);
    await page.locator("#run-gate").getByRole("button", { name: "Approve task" }).click();
    assert.deepEqual(await lastPosted("runTaskDecision"), { type: "runTaskDecision", runId: RUN_ID, taskId: "t3", decision: "approve" });
    await page.locator("#run-gate").getByRole("button", { name: "Skip task" }).click();
    assert.equal((await lastPosted("runTaskDecision")).decision, "skip");
    await page.waitForFunction(() => document.getElementById("run-graph")?.dataset.src?.includes("completed"), null, { timeout: 15000 });

    const q = { id: "c1", stage: "implementation", question: "Keep `-s` for silent?", context: "greet.sh already uses -s", options: ["keep -s", "use -S"], answer: null, askedAtMs: 1, answeredAtMs: null };
    await events([n("run/clarification/requested", { runId: RUN_ID, clarification: q })]);
    const card = page.locator('.clarification[data-clarification-id="c1"]');
    await card.waitFor();
    assert.match(await card.textContent(), /Keep -s for silent\?.*greet\.sh already uses -s/);
    await card.getByRole("button", { name: "use -S" }).click();
    assert.deepEqual(await lastPosted("runClarify"), { type: "runClarify", runId: RUN_ID, clarificationId: "c1", answer: "use -S" });
    await page.locator("#clar-c1").fill("keep it, add --shout only");
    await card.getByRole("button", { name: "Answer" }).click();
    assert.equal((await lastPosted("runClarify")).answer, "keep it, add --shout only");

    await page.getByRole("button", { name: "state.md" }).click();
    assert.deepEqual(await lastPosted("openRunFile"), { type: "openRunFile", runId: RUN_ID, file: "state.md" });
    await page.getByRole("button", { name: "plan.md" }).click();
    assert.equal((await lastPosted("openRunFile")).file, "plan.md");
    await page.getByRole("button", { name: "Pause" }).click();
    assert.deepEqual(await lastPosted("runAction"), { type: "runAction", runId: RUN_ID, action: "pause" });
  });

  test("a blocked task's repair proposal shows what failed", async () => {
    const run = sampleRun({
      status: "waiting",
      stage: "implementation",
      waitingFor: "repair",
      currentTaskId: "t2",
      repairProposal: { taskId: "t2", failure: "check failed: sh greet.sh --shout bob (exit 1)\ngrep: no match", proposedTask: task("t2-fix", "Quote the argument", { risk: "low" }) },
    });
    await events([{ kind: "run", run }]);
    await page.locator("#run-repair").waitFor();
    assert.match(await page.locator("#run-repair .repair-failure").textContent(), /exit 1\)\ngrep: no match/);
    assert.match(await page.locator("#run-repair").textContent(), /t2-fix: Quote the argument/);
    await page.getByRole("button", { name: "Approve fix and resume" }).click();
    assert.deepEqual(await lastPosted("runRepairApprove"), { type: "runRepairApprove", runId: RUN_ID, taskId: "t2" });
    await events([{ kind: "run", run: { ...run, status: "paused", waitingFor: "resume", repairProposal: null } }]);
    await page.getByRole("button", { name: "Resume" }).waitFor();
    await page.getByRole("button", { name: "Resume" }).click();
    assert.deepEqual(await lastPosted("runAction"), { type: "runAction", runId: RUN_ID, action: "resume" });
  });

  test("a run waiting on its task's thread points at that thread, not at Resume", async () => {
    const tasks = sampleRun().plan.tasks.map((t) => (t.id === "t2" ? { ...t, status: "running", threadId: "th-task-2" } : t.id === "t1" ? { ...t, status: "completed" } : t));
    const run = sampleRun({
      status: "paused",
      stage: "implementation",
      waitingFor: "taskThread",
      reason: "task t2: its thread waits: paused by the user",
      currentTaskId: "t2",
      counts: counts(tasks),
      plan: { ...sampleRun().plan, tasks, approved: true },
    });
    await events([{ kind: "run", run }]);
    await page.locator("#run-task-thread").waitFor();
    const card = await page.locator("#run-task-thread").textContent();
    assert.match(card, /Task t2 \(Upper-case the greeting\) waits in its thread/);
    assert.match(card, /paused by the user/);
    // run/resume cannot resume a task thread's full auto: no Resume button.
    assert.equal(await page.getByRole("button", { name: "Resume", exact: true }).count(), 0);
    await clearPosted();
    await page.getByRole("button", { name: "Open the task's thread" }).click();
    assert.deepEqual(await lastPosted("openThread"), { type: "openThread", threadId: "th-task-2" });
    // The thread answered: the run runs again and the card goes.
    await events([n("run/updated", { runId: RUN_ID, status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: "t2", counts: counts(tasks) })]);
    await page.locator("#run-task-thread").waitFor({ state: "detached" });
  });

  test("a run's pull request: the link, its checks and its unresolved comments", async () => {
    const pullRequest = { number: 12, url: "https://github.com/acme/greet/pull/12", state: "open", headSha: "9c1e2f3", checks: { state: "failed", summary: "1 of 3 checks failed: lint" }, unresolvedComments: 2 };
    await events([n("run/updated", { runId: RUN_ID, status: "running", stage: "implementation", waitingFor: null, reason: null, currentTaskId: "t3", counts: counts(sampleRun().plan.tasks), pullRequest })]);
    await page.locator("#run-pr").waitFor({ timeout: 5000 });
    assert.equal(await page.locator("#run-pr-link").textContent(), "pull request #12");
    assert.equal(await page.locator("#run-pr-status").textContent(), "open · checks failed · 2 unresolved comments");
    assert.match(await page.locator("#run-pr").textContent(), /1 of 3 checks failed: lint/);
    await page.locator("#run-pr-link").click();
    assert.deepEqual(await lastPosted("openLink"), { type: "openLink", href: "https://github.com/acme/greet/pull/12" });
  });

  test("a completed run shows its merge; attention with a runId opens the run", async () => {
    const tasks = sampleRun().plan.tasks.map((t, i) => ({ ...t, status: "completed", commit: `c0ffee${i}0000000000` }));
    await events([n("run/completed", { run: sampleRun({ status: "completed", stage: "done", waitingFor: null, reason: null, counts: counts(tasks), plan: { ...sampleRun().plan, tasks, approved: true }, mergeCommit: "4b7d00112233" }) })]);
    await page.waitForFunction(() => document.getElementById("run-status")?.textContent === "completed");
    assert.equal(await page.locator("#run-merge").textContent(), "4b7d0011");
    assert.equal(await page.locator("#run-stages .stage-done").count(), 6);
    assert.equal(await page.getByRole("button", { name: "Cancel" }).count(), 0);
    await page.getByRole("button", { name: "←" }).click();
    assert.deepEqual(await lastPosted("closeRun"), { type: "closeRun" });
    await events([
      { kind: "activeRun", runId: null },
      n("attention", { count: 1, oldestSinceMs: Date.now(), items: [{ threadId: "th-planner", kind: "approval", reason: "run r-2: the plan waits", sinceMs: Date.now(), runId: "r-2" }] }),
    ]);
    await page.locator("#attention .attention-count").click();
    assert.deepEqual(await lastPosted("openRun"), { type: "openRun", runId: "r-2" });
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(await page.evaluate(() => window.__csp), []);
  });
});
