// The panel's HTML, exactly as the extension generates it (same CSP and
// nonce), loaded with the built webview bundle in headless Chromium.
// acquireVsCodeApi is stubbed; host messages are posted as VS Code does.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync, mkdirSync, copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { extDir, repoRoot, lib, tempDir } from "./helpers.mjs";
import { chromium } from "playwright-core";

const { renderWebviewHtml, makeNonce, initialState, applyEvent } = lib;
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SHOT_DIR = join(extDir, "test-results");
const T = "019a-thread-demo";

function serve(routes) {
  const server = createServer((req, res) => {
    const r = routes[new URL(req.url, "http://x").pathname];
    if (!r) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": r.type, "cache-control": "no-store" });
    res.end(r.body());
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const n = (method, params) => ({ kind: "notification", method, params });

/** A snapshot as the extension would send it: connected, two threads, one open. */
function snapshotState() {
  const s = initialState({ approvals: "policy", budgets: { tokens: 200000, turns: 20, timeMs: 30 * 60000 } });
  applyEvent(s, { kind: "connection", state: "ready", message: null, version: "apserver-vscode/0.1.0" });
  applyEvent(s, {
    kind: "threadList",
    threads: [
      { id: "019a-older", preview: "Add a --json flag to the CLI", name: null, cwd: "/home/dev/app", createdAt: 1795300000, updatedAt: 1795300500, status: { type: "notLoaded" }, turns: [] },
    ],
  });
  applyEvent(s, {
    kind: "threadOpened",
    thread: { id: T, preview: "Fix the failing date test", name: "Fix the failing date test", cwd: "/home/dev/app", createdAt: 1795301000, updatedAt: 1795301200, status: { type: "idle" }, turns: [] },
  });
  return s;
}

/** Events of one live turn, in server order. */
function turnEvents() {
  const U = "turn-1";
  return [
    n("turn/started", { threadId: T, turn: { id: U, status: "inProgress", items: [] } }),
    n("item/started", { threadId: T, turnId: U, item: { type: "userMessage", id: "u1", content: [{ type: "text", text: "Fix the failing date test, then run the suite.", text_elements: [] }] } }),
    n("item/completed", { threadId: T, turnId: U, item: { type: "userMessage", id: "u1", content: [{ type: "text", text: "Fix the failing date test, then run the suite.", text_elements: [] }] } }),
    n("item/started", { threadId: T, turnId: U, item: { type: "reasoning", id: "r1", summary: [], content: [] } }),
    n("item/reasoning/summaryPartAdded", { threadId: T, turnId: U, itemId: "r1", summaryIndex: 0 }),
    n("item/reasoning/summaryTextDelta", { threadId: T, turnId: U, itemId: "r1", summaryIndex: 0, delta: "**Looking at the date parser** first." }),
    n("item/completed", { threadId: T, turnId: U, item: { type: "reasoning", id: "r1", summary: ["**Looking at the date parser** first."], content: [] } }),
    n("item/completed", {
      threadId: T,
      turnId: U,
      item: { type: "dynamicToolCall", id: "d1", tool: "read_file", arguments: { path: "src/date.ts" }, status: "completed", success: true, contentItems: [{ type: "inputText", text: "export function parseDate(s: string) {…}" }], durationMs: 3 },
    }),
    n("turn/plan/updated", {
      threadId: T,
      turnId: U,
      explanation: null,
      plan: [
        { step: "Find the failing test", status: "completed" },
        { step: "Fix parseDate for UTC offsets", status: "inProgress" },
        { step: "Run the whole suite", status: "pending" },
      ],
    }),
    n("item/started", { threadId: T, turnId: U, item: { type: "agentMessage", id: "m1", text: "" } }),
    ...["The test ", "fails because `parseDate` ", "drops the **UTC offset**.", "\n\n- fix the parser\n- run `npm test`"].map((delta) =>
      n("item/agentMessage/delta", { threadId: T, turnId: U, itemId: "m1", delta }),
    ),
    n("item/completed", {
      threadId: T,
      turnId: U,
      item: { type: "agentMessage", id: "m1", text: "The test fails because `parseDate` drops the **UTC offset**.\n\n- fix the parser\n- run `npm test`" },
    }),
    n("item/started", {
      threadId: T,
      turnId: U,
      item: {
        type: "fileChange",
        id: "fc1",
        status: "completed",
        changes: [{ path: "src/date.ts", kind: { type: "update", move_path: null }, diff: "@@ -10,3 +10,3 @@\n export function parseDate(s: string) {\n-  return new Date(s.slice(0, 19));\n+  return new Date(s);\n }\n" }],
      },
    }),
    n("item/completed", {
      threadId: T,
      turnId: U,
      item: {
        type: "fileChange",
        id: "fc1",
        status: "completed",
        changes: [{ path: "src/date.ts", kind: { type: "update", move_path: null }, diff: "@@ -10,3 +10,3 @@\n export function parseDate(s: string) {\n-  return new Date(s.slice(0, 19));\n+  return new Date(s);\n }\n" }],
      },
    }),
    n("item/started", {
      threadId: T,
      turnId: U,
      item: { type: "commandExecution", id: "c1", command: "/bin/bash -lc 'npm test'", cwd: "/home/dev/app", status: "inProgress", aggregatedOutput: null, exitCode: null, durationMs: null },
    }),
    {
      kind: "approvalRequested",
      approval: { key: "0", requestId: 0, method: "item/commandExecution/requestApproval", threadId: T, turnId: U, itemId: "c1", reason: "runs the project's tests", command: "/bin/bash -lc 'npm test'", cwd: "/home/dev/app", grantRoot: null, receivedAtMs: Date.now() },
    },
    n("thread/tokenUsage/updated", {
      threadId: T,
      turnId: U,
      tokenUsage: {
        total: { totalTokens: 18432, inputTokens: 17210, cachedInputTokens: 9000, outputTokens: 1222, reasoningOutputTokens: 300 },
        last: { totalTokens: 6120, inputTokens: 5800, cachedInputTokens: 3000, outputTokens: 320, reasoningOutputTokens: 80 },
        modelContextWindow: 128000,
      },
    }),
  ];
}

function fullAutoEvents() {
  const run = {
    threadId: T,
    state: "running",
    reason: "continuing: tests still failing",
    objective: "Make `npm test` pass",
    approvals: "policy",
    budgets: { tokens: 200000, turns: 20, timeMs: 1800000 },
    spent: { tokens: 18432, turns: 3, timeMs: 95000, costUsd: 0 },
    stopCondition: "npm test exits 0",
    lastDecision: null,
  };
  const receipt = {
    id: "rcpt-3",
    threadId: T,
    turnId: "turn-1",
    seq: 3,
    action: "continue",
    reason: "2 tests still fail after the parser fix; next: check the timezone fixture",
    confidence: 0.82,
    stopCondition: "npm test exits 0",
    rule: "tests-failing",
    source: "policy",
    nextInput: "Check the timezone fixture and rerun the tests.",
    executed: true,
  };
  return [
    n("fullAuto/statusChanged", { threadId: T, state: "running", reason: run.reason, run }),
    n("fullAuto/decision", { threadId: T, turnId: "turn-1", receipt }),
    n("attention", { count: 2, oldestSinceMs: Date.now() - 65000, items: [{ threadId: T, kind: "approval", reason: "npm test", sinceMs: Date.now() - 65000 }, { threadId: "019a-older", kind: "paused", reason: "budget", sinceMs: Date.now() - 5000 }] }),
  ];
}

describe("webview in headless Chromium", () => {
  let server, origin, browser, context, page, profile;
  const consoleCsp = [];
  const pageErrors = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium)`);
    const nonce = makeNonce();
    server = await serve({
      "/": { type: "text/html", body: () => page_html(nonce) },
      "/wrong-nonce": { type: "text/html", body: () => page_html(nonce).replace(`<script nonce="${nonce}"`, `<script nonce="not-the-nonce"`) },
      "/dist/webview.js": { type: "text/javascript", body: () => readFileSync(join(extDir, "dist/webview.js")) },
      "/dist/webview.css": { type: "text/css", body: () => readFileSync(join(extDir, "dist/webview.css")) },
    });
    origin = `http://127.0.0.1:${server.address().port}`;
    function page_html(nn) {
      // The extension's own generator, with this origin as webview.cspSource.
      return renderWebviewHtml({ cspSource: origin, nonce: nn, scriptUri: `${origin}/dist/webview.js`, styleUri: `${origin}/dist/webview.css` });
    }
    profile = tempDir("apserver-chromium-");
    context = await chromium.launchPersistentContext(profile.path, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
      viewport: { width: 460, height: 1060 },
      deviceScaleFactor: 1,
    });
    browser = context;
    await context.addInitScript(() => {
      window.__posted = [];
      window.__csp = [];
      window.__state = undefined;
      document.addEventListener("securitypolicyviolation", (e) => {
        window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
      window.acquireVsCodeApi = () => ({
        postMessage: (m) => window.__posted.push(JSON.parse(JSON.stringify(m))),
        getState: () => window.__state,
        setState: (s) => (window.__state = s),
      });
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) consoleCsp.push(m.text());
    });
    page.on("pageerror", (e) => pageErrors.push(String(e)));
  });

  after(async () => {
    await browser?.close();
    server?.close();
    profile?.remove();
  });

  const posted = () => page.evaluate(() => window.__posted);
  const send = (msg) => page.evaluate((m) => window.postMessage(m, "*"), msg);
  const settle = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

  test("the detector catches a script the CSP blocks (control)", async () => {
    await page.goto(`${origin}/wrong-nonce`);
    await page.waitForTimeout(300);
    const violations = await page.evaluate(() => window.__csp);
    assert.ok(violations.some((v) => v.startsWith("script-src")), `no violation seen: ${JSON.stringify(violations)}`);
    assert.equal(await page.evaluate(() => document.body.dataset.script ?? null), null);
    consoleCsp.length = 0;
  });

  test("the panel's own script runs under its CSP and reports ready", async () => {
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => window.__posted.some((m) => m.type === "ready"), null, { timeout: 10000 });
    assert.equal(await page.evaluate(() => document.body.dataset.script), "loaded");
    assert.deepEqual(await page.evaluate(() => window.__csp), [], "CSP violations");
    assert.deepEqual(consoleCsp, [], "CSP console errors");
    // The stylesheet applied too (style-src allows cspSource).
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(bg, "rgb(30, 30, 30)");
  });

  test("snapshot, then streamed text appears (rendered as safe markdown)", async () => {
    await send({ type: "snapshot", state: snapshotState() });
    const events = turnEvents();
    // Stream: first the events up to the second agent delta, check the partial text, then the rest.
    const cut = events.findIndex((e) => e.method === "item/agentMessage/delta") + 2;
    await send({ type: "events", events: events.slice(0, cut) });
    await page.waitForFunction(() => document.querySelector(".msg.agent")?.textContent.includes("fails because"), null, { timeout: 5000 });
    assert.equal(await page.locator(".msg.agent.streaming").count(), 1);
    await send({ type: "events", events: events.slice(cut) });
    await page.waitForFunction(() => document.querySelector(".msg.agent:not(.streaming)") !== null, null, { timeout: 5000 });
    const agentHtml = await page.locator(".msg.agent").innerHTML();
    assert.match(agentHtml, /<code>parseDate<\/code>/);
    assert.match(agentHtml, /<strong>UTC offset<\/strong>/);
    assert.match(agentHtml, /<li>fix the parser<\/li>/);
    // Other parts of the turn.
    assert.match(await page.locator(".msg.user").textContent(), /Fix the failing date test/);
    assert.equal(await page.locator("details.reasoning").getAttribute("open"), null, "reasoning starts collapsed");
    assert.equal(await page.locator("#plan .step").count(), 3);
    assert.match(await page.locator("#plan .step-inProgress").textContent(), /Fix parseDate/);
    assert.match(await page.locator("#usage").textContent(), /18k total \(in 17k, out 1\.2k\)/);
    assert.match(await page.locator(".cmd .cmd-text").textContent(), /^npm test$/);
    assert.match(await page.locator(".tool summary").textContent(), /read_file.*src\/date\.ts.*done/);
    assert.match(await page.locator("#threads").textContent(), /Add a --json flag/);
  });

  test("clicking Approve posts the decision; Open diff posts its item", async () => {
    const card = page.locator('.item[data-item-id="c1"] .approval');
    assert.equal(await card.count(), 1, "approval card is inline after its command");
    assert.match(await card.textContent(), /Run this command\?/);
    for (const label of ["Approve", "Approve for session", "Decline", "Cancel"]) {
      assert.equal(await card.getByRole("button", { name: label, exact: true }).count(), 1, `button ${label}`);
    }
    await page.screenshot({ path: join(SHOT_DIR, "vscode-panel-approval.png") });
    await card.getByRole("button", { name: "Approve", exact: true }).click();
    const p = await posted();
    assert.deepEqual(p.find((m) => m.type === "approval"), { type: "approval", key: "0", decision: "accept" });
    // The host answers: the card goes away.
    await send({ type: "events", events: [{ kind: "approvalAnswered", key: "0", decision: "accept" }, n("item/commandExecution/outputDelta", { threadId: T, turnId: "turn-1", itemId: "c1", delta: "PASS src/date.test.ts\nTests: 2 failed, 41 passed\n" })] });
    await page.waitForFunction(() => !document.querySelector(".approval"), null, { timeout: 5000 });
    assert.match(await page.locator(".cmd .output").textContent(), /41 passed/);
    await page.getByRole("button", { name: "Open diff" }).click();
    assert.deepEqual((await posted()).find((m) => m.type === "openDiff"), { type: "openDiff", threadId: T, itemId: "fc1", index: 0 });
  });

  test("Full Auto: status, budgets, latest decision, stop condition and attention render", async () => {
    await send({ type: "events", events: fullAutoEvents() });
    await page.waitForFunction(() => document.getElementById("fa-state")?.textContent === "running", null, { timeout: 5000 });
    assert.equal(await page.locator("#fa-toggle").isChecked(), true);
    const fa = await page.locator("#fullauto").textContent();
    assert.match(fa, /Make `npm test` pass|Make npm test pass/);
    assert.match(fa, /2 tests still fail after the parser fix/);
    assert.match(fa, /continue/i);
    assert.match(fa, /82%/);
    assert.match(await page.locator("#fa-stop").textContent(), /npm test exits 0/);
    assert.match(fa, /3 \/ 20/);
    // Short enough to keep the header on one line; the details are in the tooltip.
    assert.equal((await page.locator("#attention").textContent()).trim(), "⚑ 2 waiting");
    assert.match(await page.locator("#attention").getAttribute("title"), /oldest .* ago/);
    assert.equal(await page.getByRole("button", { name: "Pause" }).count(), 1);
    // The decision also shows inline in its turn.
    assert.equal(await page.locator(".turn .decision").count(), 1);
    await page.getByRole("button", { name: "Pause" }).click();
    assert.deepEqual((await posted()).filter((m) => m.type === "fullAuto").pop(), { type: "fullAuto", action: "pause" });
    // Paused: the buttons follow.
    await send({ type: "events", events: [n("fullAuto/statusChanged", { threadId: T, state: "paused", reason: "paused by you" })] });
    await page.waitForFunction(() => document.getElementById("fa-state")?.textContent === "paused", null, { timeout: 5000 });
    assert.equal(await page.getByRole("button", { name: "Resume" }).count(), 1);
    assert.equal(await page.getByRole("button", { name: "Pause" }).count(), 0);
    // Resumed, the next command waits on an approval: "waiting on you".
    await send({
      type: "events",
      events: [
        n("fullAuto/statusChanged", { threadId: T, state: "running", reason: "resumed" }),
        n("item/started", { threadId: T, turnId: "turn-1", item: { type: "commandExecution", id: "c2", command: "/bin/bash -lc 'npm test -- date'", cwd: "/home/dev/app", status: "inProgress", aggregatedOutput: null, exitCode: null, durationMs: null } }),
        { kind: "approvalRequested", approval: { key: "1", requestId: 1, method: "item/commandExecution/requestApproval", threadId: T, turnId: "turn-1", itemId: "c2", reason: "re-runs the date tests", command: "/bin/bash -lc 'npm test -- date'", cwd: "/home/dev/app", grantRoot: null, receivedAtMs: Date.now() } },
        n("fullAuto/statusChanged", { threadId: T, state: "waiting", reason: "waiting for your approval: npm test -- date" }),
      ],
    });
    await page.waitForFunction(() => document.getElementById("fa-state")?.textContent === "waiting on you", null, { timeout: 5000 });
    assert.equal(await page.locator('.item[data-item-id="c2"] .approval').count(), 1);
    await settle();
    mkdirSync(SHOT_DIR, { recursive: true });
    const shot = join(SHOT_DIR, "vscode-panel.png");
    await page.screenshot({ path: shot });
    if (process.env.UPDATE_SCREENSHOT === "1") {
      mkdirSync(join(repoRoot, "docs/images"), { recursive: true });
      copyFileSync(shot, join(repoRoot, "docs/images/vscode-panel.png"));
    }
    await send({ type: "events", events: [n("attention", { count: 0, oldestSinceMs: null, items: [] })] });
    await page.waitForFunction(() => document.getElementById("attention").classList.contains("hidden"), null, { timeout: 5000 });
  });

  test("the composer sends with Ctrl+Enter, and the toggle starts Full Auto with the form's budgets", async () => {
    await send({ type: "events", events: [n("fullAuto/statusChanged", { threadId: T, state: "stopped", reason: "stopped by you" })] });
    await page.waitForFunction(() => document.getElementById("fa-state")?.textContent === "stopped", null, { timeout: 5000 });
    await page.locator("#composer").fill("Now update the changelog");
    await page.locator("#composer").press("Control+Enter");
    assert.deepEqual((await posted()).filter((m) => m.type === "send").pop(), { type: "send", text: "Now update the changelog" });
    assert.equal(await page.locator("#composer").inputValue(), "");
    await page.locator(".fa-form summary").click();
    await page.locator("#fa-turns").fill("7");
    await page.locator("#fa-approvals").selectOption("never");
    await page.locator("#fa-objective").fill("ship it");
    await page.locator(".switch").click();
    const start = (await posted()).filter((m) => m.type === "fullAutoStart").pop();
    assert.deepEqual(start, { type: "fullAutoStart", objective: "ship it", budgets: { tokens: 200000, turns: 7, timeMs: 1800000 }, approvals: "never" });
    // Raw HTML from the model is shown as text, never run.
    await send({
      type: "events",
      events: [
        n("turn/started", { threadId: T, turn: { id: "turn-2", status: "inProgress", items: [] } }),
        n("item/agentMessage/delta", { threadId: T, turnId: "turn-2", itemId: "m2", delta: '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>' }),
        n("item/agentMessage/delta", { threadId: T, turnId: "turn-2", itemId: "m2", delta: " [link](javascript:window.__xss=3)" }),
      ],
    });
    await page.waitForFunction(() => document.querySelector('.item[data-item-id="m2"]')?.textContent.includes("<img"), null, { timeout: 5000 });
    const m2 = page.locator('.item[data-item-id="m2"]');
    assert.equal(await m2.locator("img, script, a").count(), 0);
    assert.equal(await page.evaluate(() => window.__xss ?? null), null);
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(await page.evaluate(() => window.__csp), []);
  });

  test("a finished turn offers undo, which posts revertTurn; a running one does not", async () => {
    await send({
      type: "events",
      events: [
        n("turn/completed", { threadId: T, turn: { id: "turn-2", status: "completed", items: [], error: null } }),
        n("turn/started", { threadId: T, turn: { id: "turn-3", status: "inProgress", items: [] } }),
      ],
    });
    const undo = page.locator('[data-action="revertTurn"][data-turn-id="turn-2"]');
    await undo.waitFor({ timeout: 5000 });
    assert.equal(await page.locator('[data-action="revertTurn"][data-turn-id="turn-3"]').count(), 0, "a running turn offers undo");
    await undo.click();
    assert.deepEqual((await posted()).filter((m) => m.type === "revertTurn").pop(), { type: "revertTurn", threadId: T, turnId: "turn-2" });
  });
  test("an approval stopped by the alignment check shows the verdict, the reasons and the decision; approve supersedes, decline declines", async () => {
    const reason =
      'The project brain judged this conflicting against decision dec_1a2b3c4d5e6f "Use PostgreSQL": adds mysql-connector-python (mysql); against decision dec_1a2b3c4d5e6f "Use PostgreSQL", which chose postgres. Approving records a decision that supersedes it.';
    await send({
      type: "events",
      events: [
        n("item/started", { threadId: T, turnId: "turn-3", item: { type: "commandExecution", id: "c9", command: "/bin/bash -lc 'pip install mysql-connector-python'", cwd: "/home/dev/app", status: "inProgress", aggregatedOutput: null, exitCode: null, durationMs: null } }),
        { kind: "approvalRequested", approval: { key: "9", requestId: 9, method: "item/commandExecution/requestApproval", threadId: T, turnId: "turn-3", itemId: "c9", reason, command: "/bin/bash -lc 'pip install mysql-connector-python'", cwd: "/home/dev/app", grantRoot: null, receivedAtMs: Date.now() } },
      ],
    });
    const card = page.locator('.item[data-item-id="c9"] .approval.alignment');
    await card.waitFor({ timeout: 5000 });
    assert.equal((await card.locator(".badge.verdict").textContent()).trim(), "conflicting");
    assert.match(await card.locator(".alignment-decision").textContent(), /Conflicts with decision Use PostgreSQL dec_1a2b3c4d5e6f/);
    assert.deepEqual(await card.locator(".alignment-reasons li").allTextContents(), [
      "adds mysql-connector-python (mysql)",
      'against decision dec_1a2b3c4d5e6f "Use PostgreSQL", which chose postgres',
    ]);
    const names = (await card.getByRole("button").allTextContents()).map((t) => t.trim());
    assert.deepEqual(names, ["Approve and supersede the decision", "Decline", "Decisions…"]);
    await page.screenshot({ path: join(SHOT_DIR, "vscode-panel-alignment.png") });
    await card.getByRole("button", { name: "Decisions…" }).click();
    assert.deepEqual((await posted()).filter((m) => m.type === "openDashboard").pop(), { type: "openDashboard" });
    await card.getByRole("button", { name: "Approve and supersede the decision" }).click();
    assert.deepEqual((await posted()).filter((m) => m.type === "approval").pop(), { type: "approval", key: "9", decision: "accept" });
    assert.deepEqual(await page.evaluate(() => window.__csp), []);
  });
});
