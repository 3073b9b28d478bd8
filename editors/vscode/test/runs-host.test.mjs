// The extension host's side of runs, with a stub vscode and a stand-in
// apserver (test/fake-runs-server.mjs) that logs what it is asked: the Runs
// view, and every panel message about a run turned into the right run/*
// request.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { extDir, tempDir, until } from "./helpers.mjs";
import { createVscodeStub, installVscodeStub, makeWebview } from "./vscode-stub.mjs";
import { RUN_ID } from "./runs-fixture.mjs";

const require = createRequire(import.meta.url);

describe("runs in the extension host (stub vscode, stand-in server)", () => {
  let dir, ws, worktree, logFile, stub, restore, ext, ctl, context, view;
  const answers = { warning: (text, buttons) => (buttons.includes("Cancel Run") ? "Cancel Run" : undefined) };

  const requests = () =>
    existsSync(logFile)
      ? readFileSync(logFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
      : [];
  const lastRequest = (method) => requests().filter((r) => r.method === method).pop();
  const waitRequest = async (method, pred = () => true) => {
    await until(() => requests().some((r) => r.method === method && pred(r.params)), 10000, method);
    return requests().filter((r) => r.method === method && pred(r.params)).pop().params;
  };
  const deliver = (m) => view.webview.deliver(m);

  before(async () => {
    dir = tempDir("apserver-runs-host-");
    ws = join(dir.path, "ws");
    worktree = join(dir.path, "wt");
    logFile = join(dir.path, "requests.jsonl");
    mkdirSync(ws, { recursive: true });
    mkdirSync(join(worktree, ".apserver/runs", RUN_ID), { recursive: true });
    writeFileSync(join(worktree, ".apserver/runs", RUN_ID, "state.md"), "# state\n");
    stub = createVscodeStub({
      answers,
      config: {
        __workspace: ws,
        "apserver.path": join(extDir, "test/fake-runs-server.mjs"),
        "apserver.env": { FAKE_LOG: logFile, FAKE_CWD: ws, FAKE_WORKTREE: worktree },
      },
    });
    restore = installVscodeStub(stub.vscode);
    ext = require(join(extDir, "dist/extension.js"));
    context = { subscriptions: [], extensionUri: stub.vscode.Uri.file(extDir), extensionPath: extDir };
    ctl = ext.activate(context);
    view = { webview: makeWebview(), visible: true, onDidDispose: () => ({ dispose() {} }), show() {} };
    stub.rec.viewProviders.get("apserver.panel").provider.resolveWebviewView(view, {}, {});
    deliver({ type: "ready" });
    await until(() => ctl.state.connection.state === "ready", 15000, "server ready");
  });

  after(async () => {
    await ext?.deactivate();
    for (const d of context?.subscriptions ?? []) d.dispose?.();
    restore?.();
    dir?.remove();
  });

  test("on connect the workspace's runs are listed in the Runs view, grouped by status", async () => {
    await until(() => ctl.state.runs[RUN_ID], 10000, "run/list");
    assert.equal(ctl.state.runs["r-other-repo"], undefined, "a run of another repository is not the workspace's");
    const tree = stub.rec.treeViews.get("apserver.runs");
    assert.ok(tree, "no Runs tree view");
    const provider = tree.options.treeDataProvider;
    const groups = provider.getChildren();
    assert.deepEqual(groups.map((g) => provider.getTreeItem(g).label), ["Waiting on you"]);
    const [node] = provider.getChildren(groups[0]);
    const item = provider.getTreeItem(node);
    assert.equal(item.label, "add a shout option to greet.sh");
    assert.equal(item.description, "the plan waits for approval");
    assert.deepEqual(item.command, { command: "apserver.openRun", title: "Open Run", arguments: [RUN_ID] });
    assert.equal(item.contextValue, "run.waiting");
    assert.equal(tree.badge?.value, 1, "the view's badge counts the runs waiting on you");
  });

  test("Open Run shows the run in the panel, read fresh", async () => {
    await stub.vscode.commands.executeCommand("apserver.openRun", RUN_ID);
    assert.equal(ctl.state.activeRunId, RUN_ID);
    assert.deepEqual(lastRequest("run/read"), { method: "run/read", params: { runId: RUN_ID } });
    await until(() => view.webview.posted.some((m) => m.type === "events" && m.events.some((e) => e.kind === "activeRun" && e.runId === RUN_ID)), 5000, "activeRun event to the webview");
  });

  test("a plan edit is sent as the whole plan; the notification updates the state", async () => {
    deliver({ type: "runPlanEdit", runId: RUN_ID, edit: { op: "delete", taskId: "t2" } });
    const p = await waitRequest("run/plan/update");
    assert.deepEqual(p.tasks.map((t) => t.id), ["t1", "t3"]);
    assert.deepEqual(p.tasks[1].dependencies, ["t1"], "the deleted task left the dependencies");
    assert.equal(p.tasks[0].status, undefined, "progress fields are not sent back");
    await until(() => ctl.state.runs[RUN_ID].plan.version === 2, 5000, "run/plan/updated");
    deliver({ type: "runPlanEdit", runId: RUN_ID, edit: { op: "edit", taskId: "t3", patch: { title: "Release", risk: "medium", acceptance: { checks: ["make release-check"] } } } });
    const p2 = await waitRequest("run/plan/update", (x) => x.tasks.some((t) => t.title === "Release"));
    assert.deepEqual(p2.tasks[1].acceptance.checks, ["make release-check"]);
    assert.equal(p2.tasks[1].risk, "medium");
  });

  test("approve, then notifications about the run and about a run not seen yet", async () => {
    deliver({ type: "runPlanApprove", runId: RUN_ID });
    await waitRequest("run/plan/approve");
    await until(() => ctl.state.runs[RUN_ID].plan.tasks[0].status === "running", 5000, "run/task/updated");
    assert.equal(ctl.state.runs[RUN_ID].stage, "implementation");
    await waitRequest("run/read", (p) => p.runId === "r-elsewhere");
    await until(() => ctl.state.runs["r-elsewhere"], 5000, "the unknown run read");
    // Editing is refused once the plan no longer waits: nothing is sent.
    const before = requests().length;
    await ctl.onWebviewMessage({ webview: view.webview, isVisible: () => true, ready: true }, { type: "runPlanEdit", runId: RUN_ID, edit: { op: "delete", taskId: "t1" } });
    assert.equal(requests().length, before);
    assert.match(ctl.state.notices.at(-1).text, /only be changed while it waits for approval/);
  });

  test("the gate, a clarification, a repair, pause and cancel reach the server", async () => {
    deliver({ type: "runTaskDecision", runId: RUN_ID, taskId: "t3", decision: "skip" });
    assert.deepEqual(await waitRequest("run/task/approve"), { runId: RUN_ID, taskId: "t3", decision: "skip" });
    deliver({ type: "runClarify", runId: RUN_ID, clarificationId: "c1", answer: "keep -s" });
    assert.deepEqual(await waitRequest("run/clarification/answer"), { runId: RUN_ID, clarificationId: "c1", answer: "keep -s" });
    deliver({ type: "runRepairApprove", runId: RUN_ID, taskId: "t1" });
    assert.deepEqual(await waitRequest("run/repair/approve"), { runId: RUN_ID, taskId: "t1" });
    deliver({ type: "runPlanReject", runId: RUN_ID, feedback: "split t3" });
    assert.deepEqual(await waitRequest("run/plan/reject"), { runId: RUN_ID, feedback: "split t3" });
    deliver({ type: "runAction", runId: RUN_ID, action: "pause" });
    await waitRequest("run/pause");
    await until(() => ctl.state.runs[RUN_ID].status === "paused", 5000, "paused");
    await stub.vscode.commands.executeCommand("apserver.cancelRun", RUN_ID);
    await waitRequest("run/cancel");
    assert.ok(stub.rec.messages.some((m) => m.level === "warning" && /Cancel this run\?/.test(m.text)), "cancel asks first");
    await until(() => ctl.state.runs[RUN_ID].status === "cancelled", 5000, "cancelled");
  });

  test("state.md opens from the run's worktree; a file not written yet is an error", async () => {
    deliver({ type: "openRunFile", runId: RUN_ID, file: "state.md" });
    await until(() => stub.rec.opened.some((u) => u?.path === join(worktree, ".apserver/runs", RUN_ID, "state.md")), 5000, "state.md opened");
    deliver({ type: "openRunFile", runId: RUN_ID, file: "plan.md" });
    await until(() => ctl.state.notices.some((n) => /plan\.md of run .* is not written yet/.test(n.text)), 5000, "plan.md error");
  });

  test("Run from the panel and Run This from a selection start runs with their trust and autonomy", async () => {
    deliver({ type: "runStart", request: "add a shout option", trust: { planning: "manual" }, autonomy: "semi_auto" });
    assert.deepEqual(await waitRequest("run/start"), { cwd: ws, request: "add a shout option", trust: { planning: "manual" }, autonomy: "semi_auto" });
    await until(() => ctl.state.activeRunId === "r-new", 5000, "the new run shown");

    const { Uri } = stub.vscode;
    const text = "echo hello\necho bye\n";
    const doc = {
      uri: Uri.file(join(ws, "greet.sh")),
      languageId: "shellscript",
      getText: () => text,
      lineAt: (l) => ({ range: { start: { line: l, character: 0 }, end: { line: l, character: 10 } }, text: "echo hello" }),
    };
    stub.vscode.window.activeTextEditor = {
      document: doc,
      selection: { isEmpty: false, start: { line: 0, character: 0 }, end: { line: 2, character: 0 }, active: { line: 2, character: 0 } },
    };
    stub.vscode.workspace.asRelativePath = (u) => u.path.slice(ws.length + 1);
    answers.input = () => "make it shout";
    answers.quickPick = (items) => items.find((i) => i.label === "Plan only");
    await stub.vscode.commands.executeCommand("apserver.runThis");
    const p = await waitRequest("run/start", (x) => x.request.startsWith("make it shout"));
    assert.equal(p.request, "make it shout\n\nIn `greet.sh` lines 1-2:\n\n```shellscript\necho hello\necho bye\n```");
    assert.deepEqual(p.trust, { planning: "manual" });
    assert.equal(p.autonomy, "off");
    assert.equal(p.cwd, ws);
  });
});
