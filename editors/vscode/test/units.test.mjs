// Unit tests of the pure modules: markdown, the state reducer, diffs, HTML.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { lib, tempDir } from "./helpers.mjs";

const { renderMarkdown, initialState, applyEvent, rebuildSides, diffStat, renderWebviewHtml, contentSecurityPolicy, isWebviewMessage } = lib;

describe("markdown", () => {
  test("escapes HTML everywhere", () => {
    const html = renderMarkdown('<img src=x onerror="alert(1)"> **<b>x</b>** `<i>` [<s>](https://e.com/"onmouseover=1)');
    assert.ok(!/<img|<b>|<i>|<s>/.test(html), html);
    assert.match(html, /&lt;img src=x onerror=&quot;alert\(1\)&quot;&gt;/);
    assert.match(html, /<strong>&lt;b&gt;x&lt;\/b&gt;<\/strong>/);
    assert.match(html, /<code>&lt;i&gt;<\/code>/);
    assert.ok(!/href="[^"]*"onmouseover/.test(html));
  });
  test("links only to http(s) and mailto", () => {
    assert.match(renderMarkdown("[ok](https://example.com/a?b=1&c=2)"), /<a href="https:\/\/example.com\/a\?b=1&amp;c=2"/);
    const bad = renderMarkdown("[x](javascript:alert(1)) [y](data:text/html,hi)");
    assert.ok(!/<a /.test(bad), bad);
  });
  test("code fences, also unclosed while streaming", () => {
    assert.equal(renderMarkdown("```js\nlet a = 1 < 2;\n```"), '<pre><code class="language-js">let a = 1 &lt; 2;</code></pre>');
    assert.equal(renderMarkdown("```\npartial **not bold**"), "<pre><code>partial **not bold**</code></pre>");
  });
  test("headings, lists, quotes, tables, emphasis", () => {
    const html = renderMarkdown(
      "# Title\n\nSome *it* and _it2_ and snake_case_name and ~~gone~~.\n\n- a\n- b\n  - nested\n1. one\n2. two\n\n> quoted\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n---",
    );
    assert.match(html, /<h1>Title<\/h1>/);
    assert.match(html, /<em>it<\/em> and <em>it2<\/em> and snake_case_name and <del>gone<\/del>/);
    assert.match(html, /<ul><li>a<\/li><li>b<ul><li>nested<\/li><\/ul><\/li><\/ul><ol><li>one<\/li><li>two<\/li><\/ol>/);
    assert.match(html, /<blockquote><p>quoted<\/p><\/blockquote>/);
    assert.match(html, /<table><thead><tr><th>a<\/th><th class="align-right">b<\/th><\/tr><\/thead><tbody><tr><td>1<\/td><td class="align-right">2<\/td><\/tr><\/tbody><\/table>/);
    assert.match(html, /<hr>$/);
  });
});

describe("store", () => {
  const T = "thr-1";
  const n = (method, params) => ({ kind: "notification", method, params });
  test("folds a turn: deltas, item/completed, token usage, plan, diff", () => {
    const s = initialState();
    applyEvent(s, { kind: "threadOpened", thread: { id: T, preview: "", name: null, cwd: "/w", createdAt: 1, updatedAt: 1, status: { type: "idle" }, turns: [] } });
    applyEvent(s, n("turn/started", { threadId: T, turn: { id: "u1", status: "inProgress", items: [] } }));
    applyEvent(s, n("item/agentMessage/delta", { threadId: T, turnId: "u1", itemId: "m1", delta: "Hel" }));
    applyEvent(s, n("item/agentMessage/delta", { threadId: T, turnId: "u1", itemId: "m1", delta: "lo" }));
    const conv = s.conversations[T];
    assert.equal(conv.activeTurnId, "u1");
    assert.equal(conv.turns[0].items[0].text, "Hello");
    applyEvent(s, n("item/completed", { threadId: T, turnId: "u1", item: { type: "agentMessage", id: "m1", text: "Hello!" } }));
    assert.equal(conv.turns[0].items[0].text, "Hello!");
    applyEvent(s, n("turn/plan/updated", { threadId: T, turnId: "u1", explanation: null, plan: [{ step: "a", status: "completed" }] }));
    applyEvent(s, n("turn/diff/updated", { threadId: T, turnId: "u1", diff: "d1" }));
    applyEvent(s, n("turn/diff/updated", { threadId: T, turnId: "u1", diff: "d2" }));
    assert.equal(conv.plan.steps.length, 1);
    assert.equal(conv.diff.diff, "d2");
    applyEvent(s, n("turn/completed", { threadId: T, turn: { id: "u1", status: "completed", error: null, items: [] } }));
    assert.equal(conv.activeTurnId, null);
    assert.equal(conv.turns[0].status, "completed");
  });
  test("approvals leave on serverRequest/resolved and on turn end; items in flight are finalized", () => {
    const s = initialState();
    const a = { key: "7", requestId: 7, method: "item/commandExecution/requestApproval", threadId: T, turnId: "u1", itemId: "c1", reason: null, command: "ls", cwd: null, grantRoot: null, receivedAtMs: 0 };
    applyEvent(s, n("item/started", { threadId: T, turnId: "u1", item: { type: "commandExecution", id: "c1", command: "ls", cwd: "/", status: "inProgress", aggregatedOutput: null, exitCode: null, durationMs: null } }));
    applyEvent(s, { kind: "approvalRequested", approval: a });
    assert.equal(s.approvals.length, 1);
    applyEvent(s, n("serverRequest/resolved", { threadId: T, requestId: 7 }));
    assert.equal(s.approvals.length, 0);
    applyEvent(s, { kind: "approvalRequested", approval: { ...a, key: "8", requestId: 8 } });
    applyEvent(s, n("item/agentMessage/delta", { threadId: T, turnId: "u1", itemId: "m1", delta: "Hel" }));
    const revs = s.conversations[T].turns[0].items.map((it) => it.rev);
    applyEvent(s, n("turn/completed", { threadId: T, turn: { id: "u1", status: "interrupted", error: null, items: [] } }));
    assert.equal(s.approvals.length, 0);
    const [item, msg] = s.conversations[T].turns[0].items;
    assert.equal(item.done, true);
    assert.equal(item.status, "interrupted");
    // A view renders an item again only when its rev moves: the message
    // cut short must lose its streaming caret.
    assert.equal(msg.done, true);
    assert.ok(item.rev > revs[0] && msg.rev > revs[1], `revs ${revs} -> ${item.rev},${msg.rev}`);
  });
  test("Full Auto notifications", () => {
    const s = initialState();
    const run = { threadId: T, state: "running", reason: "started", objective: "fix", approvals: "policy", budgets: { turns: 5 }, spent: { tokens: 10, turns: 1, timeMs: 5, costUsd: 0 }, stopCondition: null, lastDecision: null };
    applyEvent(s, n("fullAuto/statusChanged", { threadId: T, state: "running", reason: "started", run }));
    assert.equal(s.fullAuto[T].state, "running");
    const receipt = { id: "r1", threadId: T, turnId: "u1", seq: 1, action: "continue", reason: "tests still fail", confidence: 0.8, stopCondition: "all tests pass", rule: "tests-failing", source: "policy", nextInput: "fix it", executed: true };
    applyEvent(s, n("fullAuto/decision", { threadId: T, turnId: "u1", receipt }));
    assert.equal(s.fullAuto[T].lastDecision.reason, "tests still fail");
    assert.equal(s.fullAuto[T].stopCondition, "all tests pass");
    assert.equal(s.conversations[T].turns[0].decisions.length, 1);
    applyEvent(s, n("fullAuto/statusChanged", { threadId: T, state: "paused", reason: "by user" }));
    assert.equal(s.fullAuto[T].state, "paused");
    assert.equal(s.fullAuto[T].reason, "by user");
    applyEvent(s, n("attention", { count: 2, oldestSinceMs: 5, items: [{ threadId: T, kind: "approval", reason: "cmd", sinceMs: 5 }] }));
    assert.equal(s.attention.count, 2);
    applyEvent(s, n("attention", { count: 0, oldestSinceMs: null, items: [] }));
    assert.equal(s.attention.count, 0);
  });
  test("a lost connection interrupts what was running", () => {
    const s = initialState();
    applyEvent(s, n("turn/started", { threadId: T, turn: { id: "u1" } }));
    applyEvent(s, { kind: "connectionLost" });
    assert.equal(s.conversations[T].turns[0].status, "interrupted");
    assert.equal(s.conversations[T].activeTurnId, null);
  });
});

describe("diffs", () => {
  const before = "one\ntwo\nthree\n";
  const after = "one\n2\nthree\nfour\n";
  const patch = "@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n";
  test("update: before from the reversed patch once applied, after from the patch before", () => {
    assert.deepEqual(rebuildSides({ type: "update" }, patch, after, true), { before, after, method: "reverse-patch" });
    assert.deepEqual(rebuildSides({ type: "update" }, patch, before, false), { before, after, method: "patch" });
    // the status is wrong about the disk: the other direction is tried
    assert.equal(rebuildSides({ type: "update" }, patch, before, true).after, after);
  });
  test("with headers, add and delete", () => {
    const full = `--- a/x.txt\n+++ b/x.txt\n${patch}`;
    assert.equal(rebuildSides({ type: "update" }, full, after, true).before, before);
    assert.deepEqual(rebuildSides({ type: "add" }, "new file\n", undefined, true), { before: "", after: "new file\n", method: "content" });
    assert.equal(rebuildSides({ type: "add" }, "@@ -0,0 +1,2 @@\n+a\n+b\n", undefined, true).after, "a\nb\n");
    assert.equal(rebuildSides({ type: "delete" }, "@@ -1,2 +0,0 @@\n-a\n-b\n", undefined, true).before, "a\nb\n");
  });
  test("a file that matches neither side shows the hunks", () => {
    const s = rebuildSides({ type: "update" }, patch, "unrelated\n", true);
    assert.equal(s.method, "hunks");
    assert.equal(s.before, "one\ntwo\nthree\n");
    assert.equal(s.after, "one\n2\nthree\nfour\n");
  });
  test("diffStat", () => {
    assert.deepEqual(diffStat(patch, { type: "update" }), { added: 2, removed: 1 });
    assert.deepEqual(diffStat("a\nb\n", { type: "add" }), { added: 2, removed: 0 });
  });
});

describe("webview HTML", () => {
  test("CSP default-src 'none' with a nonce-only script and no inline handlers", () => {
    const html = renderWebviewHtml({ cspSource: "https://x.vscode-cdn.net", nonce: "abc123", scriptUri: "https://x/w.js", styleUri: "https://x/w.css" });
    const csp = contentSecurityPolicy("https://x.vscode-cdn.net", "abc123");
    assert.match(csp, /^default-src 'none'/);
    assert.match(csp, /script-src 'nonce-abc123'(;|$)/);
    assert.ok(!/unsafe-inline|unsafe-eval/.test(csp));
    assert.ok(html.includes(`content="${csp.replace(/'/g, "'")}"`));
    const scripts = html.match(/<script[^>]*>/g);
    assert.deepEqual(scripts, ['<script nonce="abc123" src="https://x/w.js">']);
    assert.ok(!/\son[a-z]+=/i.test(html), "inline event handler found");
  });
  test("messages from the webview are checked", () => {
    assert.equal(isWebviewMessage({ type: "ready" }), true);
    assert.equal(isWebviewMessage({ type: "evil" }), false);
    assert.equal(isWebviewMessage(null), false);
  });
});

test("ServerLock: a second window takes the lock over and the first is told to stop its server", async () => {
  const { ServerLock, lockKey } = lib;
  const dir = tempDir("apserver-lock-");
  // The lock's file watcher does not hold the event loop open (an extension host's is open anyway).
  const keepAlive = setInterval(() => {}, 1000);
  try {
    const key = lockKey(["/bin/apserver", ["--data-dir", "/x"], {}]);
    assert.equal(key, lockKey(["/bin/apserver", ["--data-dir", "/x"], {}]));
    assert.notEqual(key, lockKey(["/bin/apserver", ["--data-dir", "/y"], {}]));
    let lost = 0;
    let resolveLost;
    const lostOnce = new Promise((r) => (resolveLost = r));
    const a = new ServerLock(dir.path, key, () => {
      lost++;
      resolveLost();
    });
    assert.equal(await a.acquire(), 0);
    // "a" runs a server: this test process stands in for it, and a server
    // that does not stop is reported after the timeout.
    a.setServer(process.pid);
    assert.equal(a.read().apserver, process.pid);
    const b = new ServerLock(dir.path, key, () => assert.fail("b lost the lock"));
    assert.equal(await b.acquire(200), process.pid);
    await lostOnce;
    assert.equal(lost, 1);
    assert.equal(a.isHeld, false);
    a.release(); // not the owner: leaves b's lock alone
    assert.equal(b.read().owner, b.me);
    b.release();
    assert.equal(b.read(), undefined);
  } finally {
    clearInterval(keepAlive);
    dir.remove();
  }
});
