// The editor's dynamic tools end to end: activate() with a stub "vscode"
// whose Problems hold a file's diagnostics, the real apserver, and a fake
// model that calls diagnostics and open_file. The extension opts into the
// experimental API, declares the tools on thread/start and answers
// item/tool/call; thread/read shows the items' results.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { apserverBin, extDir, serveEnv, startFakeModel, tempDir, until } from "./helpers.mjs";
import { createVscodeStub, installVscodeStub, makeWebview } from "./vscode-stub.mjs";

const require = createRequire(import.meta.url);

const SCRIPT = {
  rules: [
    { match: "check the problems", steps: [{ tool_calls: [{ name: "diagnostics", arguments: { path: "main.go" } }] }, { text: "Checked the problems." }] },
    { match: "show me", steps: [{ tool_calls: [{ name: "open_file", arguments: { path: "main.go", line: 3 } }] }, { text: "Shown." }] },
  ],
};

describe("dynamic tools through activate()", () => {
  let model, data, ws, stub, restore, ext, ctl, context, view;

  before(async () => {
    model = await startFakeModel(SCRIPT);
    data = tempDir();
    ws = join(data.path, "ws");
    mkdirSync(ws, { recursive: true });
    writeFileSync(join(ws, "main.go"), "package main\n\nfunc main() { foo() }\n");
    stub = createVscodeStub({
      config: {
        __workspace: ws,
        "apserver.path": apserverBin(),
        "apserver.extraArgs": ["--data-dir", join(data.path, "db"), "--base-url", model.url, "--model", "scripted"],
        "apserver.env": { OPENAI_API_KEY: serveEnv().OPENAI_API_KEY },
      },
    });
    const { Range, Uri } = stub.vscode;
    const problems = [
      [Uri.file(join(ws, "main.go")), [{ range: new Range(2, 14, 2, 17), severity: 0, message: "undefined: foo", source: "gopls" }]],
      [Uri.file(join(ws, "other.go")), [{ range: new Range(0, 0, 0, 1), severity: 1, message: "elsewhere" }]],
    ];
    stub.vscode.languages.getDiagnostics = (uri) => (uri ? (problems.find(([u]) => u.fsPath === uri.fsPath)?.[1] ?? []) : problems);
    restore = installVscodeStub(stub.vscode);
    ext = require(join(extDir, "dist/extension.js"));
    context = { subscriptions: [], extensionUri: stub.vscode.Uri.file(extDir), extensionPath: extDir };
    ctl = ext.activate(context);
    view = { webview: makeWebview(), visible: true, onDidDispose: () => ({ dispose() {} }), show() {} };
    stub.rec.viewProviders.get("apserver.panel").provider.resolveWebviewView(view, {}, {});
    view.webview.deliver({ type: "ready" });
    await until(() => ctl.state.connection.state === "ready", 15000, "server ready");
  });

  after(async () => {
    await ext?.deactivate();
    for (const d of context?.subscriptions ?? []) d.dispose?.();
    restore?.();
    await model?.stop();
    data?.remove();
  });

  const toolItems = (tool) => {
    const conv = ctl.state.conversations[ctl.state.activeThreadId];
    return conv.turns.flatMap((t) => t.items).filter((i) => i.type === "dynamicToolCall" && i.item.tool === tool).map((i) => i.item);
  };
  const turnDone = (n) => () => {
    const c = ctl.state.activeThreadId && ctl.state.conversations[ctl.state.activeThreadId];
    return c && c.turns.length === n && c.turns[n - 1].status === "completed";
  };

  test("the model's diagnostics call gets the file's Problems", async () => {
    view.webview.deliver({ type: "send", text: "check the problems" });
    await until(turnDone(1), 15000, "the diagnostics turn");
    const [item] = toolItems("diagnostics");
    assert.ok(item, "no dynamicToolCall item");
    assert.equal(item.success, true, JSON.stringify(item));
    assert.deepEqual(item.contentItems, [{ type: "inputText", text: "main.go:3:15: error: undefined: foo (gopls)" }]);
  });

  test("open_file opens the file in an editor", async () => {
    view.webview.deliver({ type: "send", text: "show me the file" });
    await until(turnDone(2), 15000, "the open_file turn");
    const [item] = toolItems("open_file");
    assert.equal(item?.success, true, JSON.stringify(item));
    assert.ok(stub.rec.opened.some((o) => o?.fsPath === join(ws, "main.go") || o?.path === join(ws, "main.go")), JSON.stringify(stub.rec.opened));
  });
});
