// activate() in plain Node with a stub "vscode" module: what it registers,
// and the panel wiring end to end against the real apserver.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { apserverBin, extDir, serveEnv, startFakeModel, tempDir, until } from "./helpers.mjs";
import { createVscodeStub, installVscodeStub, makeWebview } from "./vscode-stub.mjs";

const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync(join(extDir, "package.json"), "utf8"));

describe("activate() with a stub vscode", () => {
  let model, data, ws, stub, restore, ext, ctl, context;
  const answers = {
    // The notification fallback: approve whatever is asked.
    info: (text, buttons) => (buttons.includes("Approve") ? "Approve" : undefined),
    // Undo this turn: confirm.
    warning: (text, buttons) => (buttons.includes("Undo") ? "Undo" : undefined),
  };

  before(async () => {
    model = await startFakeModel();
    data = tempDir();
    ws = join(data.path, "ws");
    mkdirSync(ws, { recursive: true });
    stub = createVscodeStub({
      answers,
      config: {
        __workspace: ws,
        "apserver.path": apserverBin(),
        "apserver.extraArgs": ["--data-dir", join(data.path, "db"), "--base-url", model.url, "--model", "scripted"],
        "apserver.env": { OPENAI_API_KEY: serveEnv().OPENAI_API_KEY },
        "apserver.approvalPolicy": "untrusted",
      },
    });
    restore = installVscodeStub(stub.vscode);
    ext = require(join(extDir, "dist/extension.js"));
    context = { subscriptions: [], extensionUri: stub.vscode.Uri.file(extDir), extensionPath: extDir };
    ctl = ext.activate(context);
  });

  after(async () => {
    await ext?.deactivate();
    for (const d of context?.subscriptions ?? []) d.dispose?.();
    restore?.();
    await model?.stop();
    data?.remove();
  });

  test("registers the view provider, every contributed command, the status bar and the diff provider", () => {
    const { rec } = stub;
    const viewId = pkg.contributes.views.apserver[0].id;
    assert.ok(rec.viewProviders.has(viewId), `no provider for ${viewId}`);
    assert.equal(rec.viewProviders.get(viewId).options.webviewOptions.retainContextWhenHidden, true);
    for (const c of pkg.contributes.commands) assert.ok(rec.commands.has(c.command), `command ${c.command} not registered`);
    for (const k of pkg.contributes.keybindings) assert.ok(rec.commands.has(k.command), `keybinding for unknown ${k.command}`);
    for (const want of ["apserver.newThread", "apserver.send", "apserver.interrupt", "apserver.toggleFullAuto"]) {
      assert.ok(pkg.contributes.keybindings.some((k) => k.command === want), `no keybinding for ${want}`);
    }
    assert.equal(rec.statusBarItems.length, 1);
    const sb = rec.statusBarItems[0];
    assert.equal(sb.visible, true);
    assert.equal(sb.command, "apserver.openPanel");
    assert.match(sb.text, /apserver/);
    assert.ok(rec.contentProviders.has("apserver-diff"));
    assert.equal(rec.codeActionProviders.length, 1, "the Fix with apserver code action provider");
    assert.deepEqual(pkg.capabilities.untrustedWorkspaces.supported, "limited");
    assert.ok(context.subscriptions.length >= pkg.contributes.commands.length);
    // activation did not start the server (it starts when the panel or a command needs it)
    assert.equal(ctl.state.connection.state, "stopped");
  });

  let view;
  test("the webview gets the CSP'd HTML, then a snapshot on ready, and the server starts", async () => {
    const { rec } = stub;
    const provider = rec.viewProviders.get("apserver.panel").provider;
    view = { webview: makeWebview(), visible: true, onDidDispose: () => ({ dispose() {} }), show() {} };
    provider.resolveWebviewView(view, {}, {});
    const html = view.webview.html;
    assert.equal(view.webview.options.enableScripts, true);
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)[1];
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)[1];
    assert.match(csp, /^default-src 'none'/);
    assert.ok(html.includes(`<script nonce="${nonce}" src="https://stub.vscode-cdn.net${extDir}/dist/webview.js">`));
    view.webview.deliver({ type: "ready" });
    await until(() => view.webview.posted.some((m) => m.type === "snapshot"), 5000, "snapshot");
    await until(() => ctl.state.connection.state === "ready", 15000, "server ready");
    await until(
      () => view.webview.posted.some((m) => m.type === "events" && m.events.some((e) => e.kind === "connection" && e.state === "ready")),
      5000,
      "connection event to the webview",
    );
  });

  test("send from the panel: a thread is made and the streamed reply reaches the webview", async () => {
    view.webview.deliver({ type: "send", text: "say hello" });
    await until(() => {
      const c = ctl.state.activeThreadId && ctl.state.conversations[ctl.state.activeThreadId];
      return c && c.turns.length === 1 && c.turns[0].status === "completed";
    }, 15000, "turn completed");
    const events = view.webview.posted.filter((m) => m.type === "events").flatMap((m) => m.events);
    assert.ok(events.some((e) => e.kind === "notification" && e.method === "item/agentMessage/delta"));
    assert.ok(events.some((e) => e.kind === "threadOpened"));
    const conv = ctl.state.conversations[ctl.state.activeThreadId];
    assert.match(conv.turns[0].items.find((i) => i.type === "agentMessage").text, /hello there/);
  });

  test("an approval while the panel is visible is answered from the panel", async () => {
    const before = stub.rec.messages.length;
    const turnsBefore = turnCount();
    view.webview.deliver({ type: "send", text: "run tests (panel)" });
    await until(() => ctl.state.approvals.length === 1, 15000, "approval in the state");
    const key = ctl.state.approvals[0].key;
    await until(
      () => view.webview.posted.some((m) => m.type === "events" && m.events.some((e) => e.kind === "approvalRequested" && e.approval.key === key)),
      5000,
      "approval sent to the webview",
    );
    assert.equal(stub.rec.messages.slice(before).filter((m) => m.buttons.includes("Approve")).length, 0, "no toast while visible");
    view.webview.deliver({ type: "approval", key, decision: "accept" });
    await until(() => turnCount() > turnsBefore && lastTurn().status === "completed", 15000, "turn completed");
    const cmd = lastTurn().items.find((i) => i.type === "commandExecution");
    assert.equal(cmd.status, "completed");
    assert.match(cmd.output, /hi/);
  });

  test("an approval while the panel is hidden falls back to a notification", async () => {
    view.visible = false;
    const turnsBefore = turnCount();
    view.webview.deliver({ type: "send", text: "run tests (hidden)" });
    await until(() => turnCount() > turnsBefore && lastTurn().status === "completed", 15000, "turn completed");
    const toast = stub.rec.messages.find((m) => m.level === "info" && m.buttons.includes("Approve"));
    assert.ok(toast, "no approval notification");
    assert.match(toast.text, /wants to run: .*echo hi/);
    assert.deepEqual(toast.buttons, ["Approve", "Decline", "More…"]);
    assert.doesNotMatch(toast.text, /\/bin\/(ba)?sh -c/);
    assert.equal(lastTurn().items.find((i) => i.type === "commandExecution").status, "completed");
    view.visible = true;
  });

  test("a real file change: approved in the panel, then Open diff shows before and after", async (t) => {
    writeFileSync(join(ws, "greet.txt"), "hello world\n");
    const turnsBefore = turnCount();
    view.webview.deliver({ type: "send", text: "edit the greeting please" });
    await until(() => turnCount() > turnsBefore && (lastTurn().status !== "inProgress" || ctl.state.approvals.length > 0), 15000, "approval or turn end");
    if (!lastTurn().items.some((i) => i.type === "fileChange")) {
      await until(() => lastTurn().status !== "inProgress", 15000, "turn end");
      t.skip("this apserver has no edit_file tool");
      return;
    }
    const a = ctl.state.approvals[0];
    assert.equal(a.method, "item/fileChange/requestApproval");
    view.webview.deliver({ type: "approval", key: a.key, decision: "accept" });
    await until(() => lastTurn().status === "completed", 15000, "turn completed");
    const fc = lastTurn().items.find((i) => i.type === "fileChange");
    assert.equal(fc.status, "completed");
    assert.equal(readFileSync(join(ws, "greet.txt"), "utf8"), "goodbye world\n");
    const conv = ctl.state.conversations[ctl.state.activeThreadId];
    assert.match(conv.diff.diff, /-hello world\n\+goodbye world/);
    stub.rec.executed.length = 0;
    view.webview.deliver({ type: "openDiff", threadId: ctl.state.activeThreadId, itemId: fc.id, index: 0 });
    await until(() => stub.rec.executed.some((e) => e.id === "vscode.diff"), 5000, "vscode.diff");
    const [left, right] = stub.rec.executed.find((e) => e.id === "vscode.diff").args;
    const prov = stub.rec.contentProviders.get("apserver-diff");
    assert.equal(prov.provideTextDocumentContent(left), "hello world\n");
    assert.equal(prov.provideTextDocumentContent(right), "goodbye world\n");
  });

  test("Undo this turn: the file is restored and the turn leaves the thread", async (t) => {
    if (readFileSync(join(ws, "greet.txt"), "utf8") !== "goodbye world\n") {
      t.skip("the file change test did not run");
      return;
    }
    const tid = ctl.state.activeThreadId;
    const turnId = lastTurn().id;
    const turnsBefore = turnCount();
    view.webview.deliver({ type: "revertTurn", threadId: tid, turnId });
    // The restore may replace the file: it can be missing for a moment.
    const greet = () => {
      try {
        return readFileSync(join(ws, "greet.txt"), "utf8");
      } catch {
        return null;
      }
    };
    await until(() => greet() === "hello world\n", 15000, "greet.txt restored");
    await until(() => turnCount() === turnsBefore - 1, 15000, "the turn dropped from the thread");
    assert.ok(!ctl.state.conversations[tid].turns.some((x) => x.id === turnId));
    assert.ok(stub.rec.messages.some((m) => m.level === "info" && /restored greet\.txt/.test(m.text)), "no confirmation message");
  });

  test("Open diff builds both sides from the item's diff", async () => {
    const tid = ctl.state.activeThreadId;
    stub.rec.executed.length = 0;
    writeFileSync(join(ws, "a.txt"), "one\n2\nthree\n");
    const item = {
      type: "fileChange",
      id: "fc-1",
      status: "completed",
      changes: [{ path: "a.txt", kind: { type: "update", move_path: null }, diff: "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n" }],
    };
    ctl.dispatch({ kind: "notification", method: "item/completed", params: { threadId: tid, turnId: "t-diff", item } });
    view.webview.deliver({ type: "openDiff", threadId: tid, itemId: "fc-1", index: 0 });
    await until(() => stub.rec.executed.some((e) => e.id === "vscode.diff"), 5000, "vscode.diff");
    const [left, right, title] = stub.rec.executed.find((e) => e.id === "vscode.diff").args;
    assert.equal(left.scheme, "apserver-diff");
    assert.match(title, /a\.txt/);
    const prov = stub.rec.contentProviders.get("apserver-diff");
    assert.equal(prov.provideTextDocumentContent(left), "one\ntwo\nthree\n");
    assert.equal(prov.provideTextDocumentContent(right), "one\n2\nthree\n");
  });

  test("Toggle Full Auto: starts a run, or says clearly that this apserver lacks it", async (t) => {
    const errorsBefore = stub.rec.messages.filter((m) => m.level === "error").length;
    await stub.rec.commands.get("apserver.toggleFullAuto")();
    const tid = ctl.state.activeThreadId;
    t.diagnostic(`fullAuto supported by this apserver: ${ctl.state.fullAutoSupported}`);
    if (ctl.state.fullAutoSupported === false) {
      const errs = stub.rec.messages.filter((m) => m.level === "error").slice(errorsBefore);
      assert.ok(errs.some((m) => /Full Auto/.test(m.text)), JSON.stringify(errs));
    } else {
      // This apserver has Full Auto: the run shows in the state and the status bar, then stops.
      assert.ok(ctl.state.fullAuto[tid], "no run after fullAuto/start");
      await until(() => /Full Auto: /.test(stub.rec.statusBarItems[0].text), 5000, "status bar shows the run");
      await stub.rec.commands.get("apserver.fullAutoStop")();
      await until(() => ctl.state.fullAuto[tid].state === "stopped", 10000, "run stopped");
      await until(() => /Full Auto: stopped/.test(stub.rec.statusBarItems[0].text), 5000, "status bar shows stopped");
      await until(() => ctl.state.activeThreadId && !ctl.state.conversations[tid].activeTurnId, 15000, "last turn over");
    }
  });

  test("the status bar follows Full Auto state and attention", () => {
    const { statusBarText } = ext;
    const tid = "t1";
    const base = { ...ctl.state, activeThreadId: tid, connection: { state: "ready", message: null, version: null } };
    const run = (state) => ({ threadId: tid, state, reason: "r", objective: null, approvals: "policy", budgets: { turns: 10 }, spent: { tokens: 0, turns: 3, timeMs: 0, costUsd: 0 }, stopCondition: "tests pass", lastDecision: null });
    assert.match(statusBarText({ ...base, fullAuto: { [tid]: run("running") } }).text, /Full Auto: running 3\/10 turns/);
    assert.match(statusBarText({ ...base, fullAuto: { [tid]: run("paused") } }).text, /Full Auto: paused/);
    const waiting = statusBarText({ ...base, fullAuto: { [tid]: run("waiting") }, attention: { count: 2, oldestSinceMs: 1, items: [] } });
    assert.match(waiting.text, /waiting on you.* 2 waiting/);
    assert.equal(waiting.attention, true);
    assert.match(waiting.tooltip, /Stop condition: tests pass/);
    assert.match(statusBarText({ ...base, fullAuto: { [tid]: run("stopped") } }).text, /Full Auto: stopped/);
    assert.match(statusBarText({ ...base, fullAuto: {} }).text, /apserver/);
  });

  test("Compact Context, and /compact in the composer, run a compaction turn", async () => {
    const tid = ctl.state.activeThreadId;
    const compactions = () =>
      ctl.state.conversations[tid].turns.filter((x) => x.status === "completed" && x.items.some((i) => i.type === "contextCompaction")).length;
    const before = compactions();
    await stub.rec.commands.get("apserver.compact")();
    await until(() => compactions() === before + 1, 15000, "a completed compaction turn");
    view.webview.deliver({ type: "send", text: "/compact" });
    await until(() => compactions() === before + 2, 15000, "a second compaction turn, from the composer");
    // "/compact" is a command, not a message to the model
    assert.ok(!ctl.state.conversations[tid].turns.some((x) => x.items.some((i) => i.type === "userMessage" && JSON.stringify(i).includes("/compact"))));
  });

  test("Restart Server brings a fresh process and rejoins the thread", async () => {
    const pid = ctl.clientForTests.pid;
    await stub.rec.commands.get("apserver.restartServer")();
    assert.equal(ctl.state.connection.state, "ready");
    assert.notEqual(ctl.clientForTests.pid, pid);
    assert.ok(ctl.state.activeThreadId);
  });

  function turnCount() {
    return ctl.state.conversations[ctl.state.activeThreadId]?.turns.length ?? 0;
  }
  function lastTurn() {
    const c = ctl.state.conversations[ctl.state.activeThreadId];
    return c?.turns[c.turns.length - 1];
  }
});
