// The project in a real VS Code (code-server): ingest a small blueprint
// and see the explorer fill in, make the tasks of its feature, start
// building its first phase under full_auto with the scripted model, watch
// the runs from the dashboard, answer the high-risk gate from the panel and
// see the phase reach done. UPDATE_SCREENSHOT=1 copies the explorer's and
// the dashboard's screenshots to media/ (the extension's README shows them).
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { contextMenu, copyShot, EXT_ID, extensionLoaded, runCommand, shot, startFakeModel, startVSCode, testWithShot, uncaughtErrors, until } from "./harness.mjs";
import { GREET, PROJECT_SCRIPT, SPEC } from "../test/project-fixture.mjs";

const update = process.env.UPDATE_SCREENSHOT === "1";
const media = (name) => join(import.meta.dirname, "..", "media", name);

describe("real VS Code: a blueprint built by the manager", () => {
  const test = testWithShot(nodeTest, () => page);
  let vs, model, page;
  const git = (...args) => execFileSync("git", args, { cwd: vs.workspace, encoding: "utf8" }).trim();
  const frames = `iframe.webview[src*="extensionId=${EXT_ID}"]`;
  // A row of a view (not of the notifications' list).
  const row = (text) => page.locator(".pane-body .monaco-list-row", { hasText: text }).first();

  /** The webview whose page holds selector (the dashboard or the panel). */
  async function frameWith(selector, timeoutMs = 30000) {
    let found;
    await until(
      async () => {
        const n = await page.locator(frames).count();
        for (let i = 0; i < n; i++) {
          const f = page.frameLocator(frames).nth(i).frameLocator("#active-frame");
          if ((await f.locator(selector).count()) > 0) {
            found = f;
            return true;
          }
        }
        return false;
      },
      timeoutMs,
      `a webview with ${selector}`,
    );
    return found;
  }

  before(async () => {
    model = await startFakeModel(PROJECT_SCRIPT);
    vs = await startVSCode({
      modelUrl: model.url,
      files: { "greet.sh": GREET, "README.md": "# greet\n", "spec.md": SPEC, ".gitignore": ".apserver/\n" },
      settings: { "files.simpleDialog.enable": true },
    });
    git("init", "-q", "-b", "main");
    git("config", "user.name", "Test User");
    git("config", "user.email", "test@example.com");
    git("add", "-A");
    git("commit", "-q", "-m", "greet");
    git("checkout", "-q", "-b", "feature"); // the runs branch from and merge into the checked-out branch
    const context = await vs.browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
    page = await context.newPage();
    page.on("pageerror", (e) => vs.output.push(`pageerror: ${e.message}`));
    await page.goto(vs.url, { waitUntil: "commit" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 120000 });
    await extensionLoaded(page);
    vs.pages.push(page);
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("Ingest Blueprint: a file picked, progress, then the explorer fills in with done/total", async () => {
    await runCommand(page, "apserver: Ingest Blueprint…");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ timeout: 20000 });
    // The picker (VS Code's simple file dialog) lists the folder first, and resets its input while it does.
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "spec.md" }).waitFor({ timeout: 20000 });
    const want = join(vs.workspace, "spec.md");
    await until(async () => {
      await input.fill(want);
      return (await input.inputValue()) === want;
    }, 20000, "the picker's path");
    await input.press("Enter");
    await page.locator(".notification-toast", { hasText: /Blueprint ".*" ready: 4 nodes/ }).waitFor({ timeout: 60000 });
    await runCommand(page, "Focus on Blueprint View");
    await row("Phase 1: Greeting").waitFor({ timeout: 20000 });
    assert.match(await row("Phase 1: Greeting").textContent(), /phase · 0\/1/);
    // The preamble is in no node: a coverage warning heads the tree.
    await row("Coverage").waitFor({ timeout: 20000 });
    assert.match(await row("Coverage").textContent(), /% covered · 1 gap/);
    await row("Phase 2: Later").waitFor();
    // A click opens the node's source; the twistie expands it.
    await row("Phase 1: Greeting").click();
    await page.locator(".tab", { hasText: "spec.md" }).waitFor({ timeout: 20000 });
    await row("Phase 1: Greeting").locator(".monaco-tl-twistie").click();
    await row("Feature: Shout").waitFor({ timeout: 20000 });
  });

  test("Generate Tasks for Node from the feature's context menu; the tree shows them", async () => {
    await contextMenu(page, row("Feature: Shout"), "Generate Tasks for Node");
    // The node opens on its new tasks.
    await row("S1 make greet.sh accept --shout").waitFor({ timeout: 60000 });
    await row("S3 document --shout").waitFor();
    assert.match(await row("Feature: Shout").textContent(), /feature · 0\/3/);
    // The source excerpt on hover.
    await row("Feature: Shout").hover();
    await page.locator(".monaco-hover", { hasText: "The tool MUST accept --shout" }).waitFor({ timeout: 20000 });
    const file = await shot(page, "blueprint-tree");
    if (update) copyShot(file, media("blueprint-tree.png"));
    await page.mouse.move(700, 600);
  });

  test("Start Building the phase under full_auto: the manager starts a run and says so", async () => {
    await row("Phase 1: Greeting").hover();
    await row("Phase 1: Greeting").locator('.action-label[aria-label="Start Building"]').click();
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ timeout: 20000 });
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "Full" }).first().click();
    await page.locator(".notification-toast", { hasText: "The manager started a run" }).waitFor({ timeout: 60000 });
    await page.locator(`.statusbar-item`, { hasText: /Manager Full/ }).waitFor({ timeout: 30000 });
  });

  test("the dashboard: the phase, the runs and the ticks, live; the high-risk gate answered from the panel; the phase done", async () => {
    await runCommand(page, "apserver: Open Project Dashboard");
    const d = await frameWith("#d-blueprint");
    await d.locator("#d-blueprint", { hasText: "Phase 1: Greeting" }).waitFor({ timeout: 30000 });
    await d.locator("#d-ticks", { hasText: "started_run" }).waitFor({ timeout: 30000 });
    // S1 done, S2 (high risk) waits for a human even under full_auto.
    await d.locator("#d-risks", { hasText: "run waits for you (taskApproval)" }).waitFor({ timeout: 180000 });
    await page.locator(`.statusbar-item`, { hasText: /Manager Full: waiting for you/ }).waitFor({ timeout: 30000 });
    const file = await shot(page, "project-dashboard");
    if (update) copyShot(file, media("project-dashboard.png"));
    // Open the waiting run from the dashboard: the panel shows its gate.
    await d.locator(".run.s-waiting a").first().click();
    const p = await frameWith("#run-status");
    await p.getByRole("button", { name: "Approve task" }).click();
    await d.locator("#d-blueprint .badge.done").waitFor({ timeout: 200000 });
    await page.locator(`.statusbar-item`, { hasText: /Manager Full: phase done/ }).waitFor({ timeout: 30000 });
    assert.match(git("show", "feature:README.md"), /--shout/, "S3's change merged");
    // The tree follows blueprint/updated (it may render a moment after the status bar).
    await until(async () => /feature · 3\/3 · done/.test(await row("Feature: Shout").textContent()), 20000, "the feature 3/3 done in the tree");
  });

  test("the extension host logged no uncaught error", async () => {
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });
});
