// The project in the extension host (stub vscode) against the real apserver
// and its scripted model: Ingest Blueprint with its progress, the explorer
// filling in, the source excerpt and Go to Source, Generate Tasks, the
// manager's pill, Start Building a phase under full_auto (a run starts and a
// toast says so), and the dashboard with its decisions.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { apserverBin, extDir, serveEnv, startFakeModel, tempDir, until } from "./helpers.mjs";
import { createVscodeStub, installVscodeStub } from "./vscode-stub.mjs";
import { GREET, PROJECT_SCRIPT, SPEC } from "./project-fixture.mjs";

const require = createRequire(import.meta.url);

describe("the project in the extension host (stub vscode, real apserver)", () => {
  let model, data, ws, stub, restore, ext, ctl, context, tree;
  const inputs = [];
  const answers = {
    quickPick: (items, opts) => (/^Build "/.test(opts?.title ?? "") ? items.find((i) => i.label === "Full") : undefined),
    input: () => inputs.shift(),
  };
  const git = (...args) => execFileSync("git", args, { cwd: ws, encoding: "utf8" }).trim();

  before(async () => {
    model = await startFakeModel(PROJECT_SCRIPT);
    data = tempDir("apserver-project-host-");
    ws = join(data.path, "ws");
    mkdirSync(ws, { recursive: true });
    writeFileSync(join(ws, "greet.sh"), GREET);
    writeFileSync(join(ws, "README.md"), "# greet\n");
    writeFileSync(join(ws, "spec.md"), SPEC);
    // apserver writes .apserver/memory.md into the checkout; a run that commits its own copy
    // could then not be merged into the checked-out branch (reported, not this test's subject).
    writeFileSync(join(ws, ".gitignore"), ".apserver/\n");
    // A configuration file of its own (empty): MCP reload reads it.
    writeFileSync(join(data.path, "config.toml"), "");
    git("init", "-q", "-b", "main");
    git("config", "user.name", "Test User");
    git("config", "user.email", "test@example.com");
    git("add", "-A");
    git("commit", "-q", "-m", "greet");
    // As e2e/runs_test.go's shoutRepo: a branch of its own (the runs branch from it and merge into it).
    git("checkout", "-q", "-b", "feature");
    stub = createVscodeStub({
      answers,
      config: {
        __workspace: ws,
        "apserver.path": apserverBin(),
        "apserver.extraArgs": ["--data-dir", join(data.path, "db"), "--config", join(data.path, "config.toml"), "--base-url", model.url, "--model", "scripted"],
        "apserver.env": { OPENAI_API_KEY: serveEnv().OPENAI_API_KEY },
      },
    });
    restore = installVscodeStub(stub.vscode);
    ext = require(join(extDir, "dist/extension.js"));
    context = { subscriptions: [], extensionUri: stub.vscode.Uri.file(extDir), extensionPath: extDir };
    ctl = ext.activate(context);
    tree = stub.rec.treeViews.get("apserver.blueprint").options.treeDataProvider;
    await ctl.ensureStarted();
    await until(() => ctl.state.connection.state === "ready", 20000, "server ready");
  });

  after(async () => {
    await ext?.deactivate();
    for (const d of context?.subscriptions ?? []) d.dispose?.();
    restore?.();
    await model?.stop();
    data?.remove();
  });

  const managerItem = () => stub.rec.statusBarItems.find((i) => i.name === "apserver Manager");
  let phase1, feature;

  test("Ingest Blueprint: progress in chunks done/total, then the tree of phases with done/total", async () => {
    assert.equal(managerItem(), undefined, "no manager in the status bar before the workspace is a project");
    await stub.vscode.commands.executeCommand("apserver.ingestBlueprint", join(ws, "spec.md"));
    const prog = stub.rec.progress.find((p) => p.title === "Ingesting spec.md");
    assert.ok(prog, "a progress notification");
    assert.equal(prog.cancellable, true);
    assert.ok(prog.reports.some((r) => /^1\/1 chunks, \d+ nodes$/.test(r.message)), JSON.stringify(prog.reports));
    assert.ok(stub.rec.messages.some((m) => /Blueprint ".*" ready: 4 nodes/.test(m.text)), JSON.stringify(stub.rec.messages));
    const [gap, ...roots] = await tree.getChildren();
    // The preamble is in no node: a warning row first, which opens the coverage.
    const gapItem = tree.getTreeItem(gap);
    assert.equal(gapItem.label, "Coverage");
    assert.match(gapItem.description, /^\d+\.\d% covered · 1 gap$/);
    assert.equal(gapItem.iconPath.id, "warning");
    assert.equal(gapItem.command.command, "apserver.showCoverage");
    assert.deepEqual(roots.map((r) => r.node.title), ["Phase 1: Greeting", "Phase 2: Later"]);
    phase1 = roots[0];
    const item = tree.getTreeItem(phase1);
    assert.equal(item.description, "phase · 0/1");
    assert.equal(item.iconPath.id, "circle-large-outline");
    [feature] = await tree.getChildren(phase1);
    assert.equal(feature.node.title, "Feature: Shout");
    const tip = tree.getTreeItem(feature).tooltip.value;
    assert.match(tip, /The tool MUST accept --shout and greet in capitals\./, "the source excerpt on hover");
    await until(() => /Manager: Off/.test(managerItem()?.text ?? ""), 10000, "the manager's pill");
    assert.equal(managerItem().command, "apserver.manager.menu");
  });

  test("the MCP Servers view lists what apserver has (none here) and Reload asks apserver to reload", async () => {
    const mcp = stub.rec.treeViews.get("apserver.mcp").options.treeDataProvider;
    const rows = await mcp.getChildren();
    assert.deepEqual(rows.map((r) => mcp.getTreeItem(r).label), ["No MCP server configured (docs/mcp.md)."]);
    await stub.vscode.commands.executeCommand("apserver.reloadMcp");
    assert.ok(!stub.rec.messages.some((m) => m.level === "error"), JSON.stringify(stub.rec.messages));
  });

  test("Go to Source opens the specification at the node's heading", async () => {
    await stub.vscode.commands.executeCommand("apserver.blueprint.goToSource", feature);
    const shown = stub.rec.shown.pop();
    assert.equal(shown.doc.uri.fsPath, join(ws, "spec.md"));
    assert.deepEqual(shown.opts.selection.start, { line: 4, character: 0 });
  });

  test("Generate Tasks for Node shows the planner's tasks under it", async () => {
    await stub.vscode.commands.executeCommand("apserver.generateTasks", feature);
    const tasks = await tree.getChildren(feature);
    assert.deepEqual(tasks.map((t) => t.node.title), ["S1 make greet.sh accept --shout", "S2 add test_greet.sh", "S3 document --shout"]);
    assert.equal(tree.getTreeItem(feature).description, "feature · 0/3");
    assert.equal(tasks[1].node.risk, "high");
  });

  test("Show Coverage reports what the tree covers", async () => {
    await stub.vscode.commands.executeCommand("apserver.showCoverage");
    assert.match(stub.rec.shown.pop().doc.content, /# Coverage of .*\n\n\d+ of \d+ bytes in some node .*; 1 of 1 normative sentences mapped\.\n\n## Gaps \(1\)\n\n- ⚠ bytes 0–\d+: A greeting tool, specified\./);
    // The gap is a warning on the specification, in the Problems view.
    const diags = stub.rec.diagnostics.get(stub.vscode.Uri.file(join(ws, "spec.md")).toString());
    assert.equal(diags.length, 1);
    assert.equal(diags[0].message, "Not covered by any blueprint node");
    assert.deepEqual(diags[0].range.start, { line: 0, character: 0 });
  });

  test("Start Building a phase under full_auto: the manager starts a run, the toast says so, the pill and the dashboard follow", async () => {
    await stub.vscode.commands.executeCommand("apserver.startBuilding", phase1);
    await until(() => stub.rec.messages.some((m) => /^The manager builds "Phase 1: Greeting": started_run/.test(m.text)), 15000, "started_run");
    await until(() => stub.rec.messages.some((m) => /^The manager started a run: task t_/.test(m.text) && m.buttons.includes("Open Run")), 15000, "the toast");
    await until(() => /Manager Full: /.test(managerItem().text), 10000, "full in the pill");
    // The dashboard: the blueprint, the phase, the run with its link, the tick.
    await stub.vscode.commands.executeCommand("apserver.openDashboard");
    const panel = stub.rec.webviewPanels.find((p) => p.viewType === "apserver.dashboard");
    assert.ok(panel);
    assert.match(panel.webview.html, /Content-Security-Policy" content="default-src 'none'; [^"]*script-src 'nonce-[0-9a-f]{32}'/);
    panel.webview.deliver({ type: "ready" });
    const body = async (re) => {
      await until(() => panel.webview.posted.some((m) => m.type === "render" && re.test(m.html)), 15000, String(re));
    };
    await body(/Phase: <b>Phase 1: Greeting<\/b>/);
    await body(/data-action="openRun" data-id="[^"]+">Build/);
    await body(/<b>started_run<\/b> — task t_/);
    // Add a decision from the dashboard, then revoke it.
    inputs.push("Use POSIX sh", "No bash-only syntax in scripts.");
    panel.webview.deliver({ type: "action", action: "addDecision" });
    await body(/<b>Use POSIX sh<\/b> <span class="muted">active · user · (dec_[0-9a-f]+)/);
    const id = /data-action="revokeDecision" data-id="(dec_[0-9a-f]+)"/.exec(panel.webview.posted.filter((m) => m.type === "render").pop().html)[1];
    inputs.push("changed our minds");
    panel.webview.deliver({ type: "action", action: "revokeDecision", id });
    await until(async () => (await ctl.call("project/decision/list", { cwd: ws, all: true })).decisions.some((d) => d.id === id && d.status === "revoked"), 10000, "revoked");
  });

  test("the run's task becomes done in the tree as blueprint/updated arrives", async () => {
    const tasks = await tree.getChildren(feature);
    await until(() => tasks[0].node.status === "done" || feature.children?.[0]?.node.status === "done", 90000, "S1 done in the tree");
    assert.match(tree.getTreeItem(feature).description, /^feature · 1\/3/);
  });

  test("the high-risk task waits for you: the Runs badge and the pill say so; approved, the phase reaches done", async () => {
    const waiting = () => Object.values(ctl.state.runs).find((r) => r.status === "waiting" && r.waitingFor === "taskApproval");
    await until(() => waiting(), 90000, "S2 waits for a task approval");
    const runsView = stub.rec.treeViews.get("apserver.runs");
    await until(() => runsView.badge?.value === 1, 10000, "the Runs badge");
    await until(() => /Manager Full: waiting for you/.test(managerItem().text), 10000, "the pill waits for you");
    const run = waiting();
    const taskId = run.plan.tasks.find((t) => /S2/.test(t.title)).id;
    await ctl.runRequest("run/task/approve", { runId: run.id, taskId, decision: "approve" });
    try {
      await until(async () => (await ctl.call("project/status", { cwd: ws })).phaseDone, 120000, "phase 1 done");
    } catch (e) {
      const st = await ctl.call("project/status", { cwd: ws });
      const runs = Object.values(ctl.state.runs).map((r) => `${r.request} ${r.status} ${r.waitingFor} ${r.reason}`);
      throw new Error(`${e.message}: status ${JSON.stringify(st)}; runs ${JSON.stringify(runs)}`);
    }
    await until(() => /Manager Full: phase done/.test(managerItem().text), 10000, "the pill says the phase is done");
    assert.equal(runsView.badge, undefined);
    const tasks = await tree.getChildren(feature);
    await until(() => tasks.every((t) => t.node.status === "done"), 10000, "every task done in the tree");
    assert.equal(tree.getTreeItem(feature).description, "feature · 3/3 · done");
  });
});
