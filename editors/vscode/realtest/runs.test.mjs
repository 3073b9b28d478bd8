// Runs in a real VS Code (code-server): a run started from the panel goes
// plan → approval → tasks → done against the scripted model, every step
// visible in the panel, the plan graph drawn by the bundled Mermaid, and the
// Runs view listing it. UPDATE_SCREENSHOT=1 copies the plan screenshot to
// media/runs-plan.png (the extension's README shows it).
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { copyShot, EXT_ID, extensionLoaded, openPanel, runCommand, shot, startFakeModel, startVSCode, testWithShot, uncaughtErrors, until, waitConnected } from "./harness.mjs";

const GREET = '#!/bin/sh\necho "Hello, $1"\n';
const accept = (check) => ({ criteria: ["the check passes"], checks: [check], files: [] });
const TASKS = [
  { id: "t1", title: "S1 make greet.sh accept --shout", description: "Parse `--shout` and greet in capitals.", kind: "file_edit", dependencies: [], risk: "low", acceptance: accept("sh greet.sh --shout bob | grep -q 'HELLO, BOB'"), estimate: "5m" },
  { id: "t2", title: "S2 add test_greet.sh", description: "A test script for both modes.", kind: "test", dependencies: ["t1"], risk: "medium", acceptance: accept("sh test_greet.sh"), estimate: "5m" },
  { id: "t3", title: "S3 document --shout", description: "Mention `--shout` in README.md.", kind: "docs", dependencies: ["t1", "t2"], risk: "low", acceptance: accept("grep -q -- --shout README.md"), estimate: "2m" },
];
const task = (marker, command) => ({ match: marker, steps: [{ text: "Working on it.", tool_calls: [{ command }] }, { text: "The task is complete." }] });
// The planner, each task and the validator are told apart by their input
// ("Plan this request", the task's S1…S3 marker, "Review task"), as in e2e/runs_test.go.
const SCRIPT = {
  rules: [
    { match: "Review task", steps: [{ text: JSON.stringify({ pass: true, findings: "the diff does what the task says" }) }] },
    { match: "Plan this request", steps: [{ text: JSON.stringify({ summary: "Add `--shout` to greet.sh, test it, document it.", tasks: TASKS, clarification: null }) }] },
    task("S1 make greet.sh", `printf '%s\\n' '#!/bin/sh' 'if [ "$1" = "--shout" ]; then echo "Hello, $2" | tr a-z A-Z; else echo "Hello, $1"; fi' > greet.sh`),
    task("S2 add test_greet.sh", `printf '%s\\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`),
    task("S3 document", `printf '%s\\n' '' 'Use --shout to greet in capitals.' >> README.md`),
  ],
  default: [{ text: "The task is complete." }],
};

// The server side of runs (issue 12) came with `apserver run`: a build
// without it cannot serve run/*, and this file says so instead of failing.
function serverHasRuns() {
  try {
    execFileSync(process.env.APSERVER_TEST_BIN, ["run", "--help"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const noRuns = serverHasRuns() ? false : "this apserver has no runs (no `apserver run`, no run/*): built before issue 12's server side";

/** A window on vs, waiting for the workbench rather than the page's load event (slow on a busy machine). */
async function openWindow(vs, viewport) {
  const context = await vs.browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.on("pageerror", (e) => vs.output.push(`pageerror: ${e.message}`));
  await page.goto(vs.url, { waitUntil: "commit" });
  await page.locator(".monaco-workbench").waitFor({ timeout: 120000 });
  await extensionLoaded(page);
  vs.pages.push(page);
  return page;
}

describe("real VS Code: a run from the panel", { skip: noRuns }, () => {
  const test = testWithShot(nodeTest, () => page);
  let vs, model, page, f;
  const git = (...args) => execFileSync("git", args, { cwd: vs.workspace, encoding: "utf8" }).trim();

  before(async () => {
    model = await startFakeModel(SCRIPT);
    vs = await startVSCode({ modelUrl: model.url, files: { "greet.sh": GREET, "README.md": "# greet\n" } });
    git("init", "-q", "-b", "main");
    git("config", "user.name", "Test User");
    git("config", "user.email", "test@example.com");
    git("add", "-A");
    git("commit", "-q", "-m", "greet");
    page = await openWindow(vs, { width: 1400, height: 1000 });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("Run with the composer's request: the planner's plan shows as a tree and a graph, waiting for approval", async () => {
    f = await openPanel(page);
    await waitConnected(f);
    await f.locator("#composer").fill("add a shout option to greet.sh");
    await f.locator("#run-options summary").click();
    await f.locator("#ro-planning").selectOption("manual");
    await f.locator("#ro-autonomy").selectOption("full_auto");
    await f.locator("#run-start").click();
    await f.locator("#run-status").waitFor({ timeout: 30000 });
    await until(async () => (await f.locator("#run-tasks > .task").count()) === 3, 60000, "the plan's three tasks");
    assert.equal(await f.locator("#run-status").textContent(), "waiting on you");
    assert.equal(await f.locator("#run-stages .stage-current").textContent(), "plan approval");
    assert.match(await f.locator("#run-branch").textContent(), /^apserver\/.+-add-a-shout-option/);
    assert.equal(await f.locator('#run-tasks > .task[data-task-id="t2"] .risk-medium').count(), 1);
    assert.equal(await f.locator('#run-tasks > .task[data-task-id="t3"] .task-deps').textContent(), "after t1, t2");
    await f.locator('#run-graph[data-state="drawn"] svg').waitFor({ timeout: 60000 });
    assert.equal(await f.locator("#run-graph svg .node").count(), 3);
    assert.equal(await f.locator("#run-graph svg .edgePaths path").count(), 3);
    // The Runs view (collapsed at first, so the panel keeps the height) lists it under "Waiting on you".
    const runsHeader = page.locator(".pane-header", { hasText: "Runs" });
    await runsHeader.waitFor({ timeout: 20000 });
    if ((await runsHeader.getAttribute("aria-expanded")) !== "true") await runsHeader.click();
    await until(async () => (await page.locator(".monaco-list-row", { hasText: "add a shout option to greet.sh" }).count()) > 0, 20000, "the run in the Runs view");
    // The same run in the panel opened as an editor tab: wide, the graph beside the tree.
    await runCommand(page, "apserver: Open Panel in Editor Tab");
    const frames = `iframe.webview[src*="extensionId=${EXT_ID}"]`;
    await until(async () => (await page.locator(frames).count()) === 2, 20000, "the panel's tab");
    f = page.frameLocator(frames).nth(1).frameLocator("#active-frame");
    await f.locator('#run-graph[data-state="drawn"] svg').waitFor({ timeout: 60000 });
    await page.keyboard.press("Control+b"); // the sidebar out of the way
    // The webview's overlay follows the layout: the tab's frame moves to the activity bar's edge.
    await until(async () => ((await page.locator(frames).nth(1).boundingBox())?.x ?? 999) < 120, 10000, "the tab laid out without the sidebar");
    const file = await shot(page, "runs-plan");
    if (process.env.UPDATE_SCREENSHOT === "1") copyShot(file, join(import.meta.dirname, "..", "media", "runs-plan.png"));
  });

  test("an edit goes to the server and comes back as the new plan", async () => {
    await f.locator('#run-tasks > .task[data-task-id="t3"]').getByRole("button", { name: "edit" }).click();
    await f.locator("#tf-title").fill("S3 document --shout in the README");
    await f.getByRole("button", { name: "Save" }).click();
    await until(async () => /in the README/.test(await f.locator('#run-tasks > .task[data-task-id="t3"] .task-title').textContent()), 20000, "the edited title");
    assert.match(await f.locator(".run-plan .box-title").textContent(), /v2/);
  });

  test("approve: the tasks run in order, each committed, and the run completes merged", async () => {
    await f.getByRole("button", { name: "Approve plan" }).click();
    await until(async () => (await f.locator("#run-stages .stage-current").textContent()) !== "plan approval", 30000, "past plan approval");
    await until(async () => (await f.locator("#run-status").textContent()) === "completed", 240000, "the run completed");
    assert.equal(await f.locator("#run-count").textContent(), "3/3 tasks done");
    assert.equal(await f.locator("#run-tasks .task-st.st-completed").count(), 3);
    assert.equal(await f.locator("#run-stages .stage-done").count(), 6);
    assert.equal(await f.locator("#run-commits li").count(), 3);
    assert.match(await f.locator("#run-merge").textContent(), /^[0-9a-f]{8}$/);
    assert.match(git("show", "main:greet.sh"), /--shout/);
    await shot(page, "runs-done");
  });

  test("state.md opens in an editor", async () => {
    await f.getByRole("button", { name: "state.md" }).click();
    await page.locator(".tab", { hasText: "state.md" }).waitFor({ timeout: 20000 });
  });

  test("the extension host logged no uncaught error", async () => {
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });
});
