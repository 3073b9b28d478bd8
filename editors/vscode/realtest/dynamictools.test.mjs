// The editor's dynamic tools in a real VS Code (code-server): the model
// calls `diagnostics` for a file whose Problems VS Code's own JSON language
// server reported, and the answer the extension gave (shown in the panel's
// tool item) holds that Problem.
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { openPanel, runCommand, send, shot, startFakeModel, startVSCode, testWithShot, waitConnected } from "./harness.mjs";

const SCRIPT = {
  rules: [
    {
      match: "check the problems",
      steps: [{ tool_calls: [{ name: "diagnostics", arguments: { path: "bad.json" } }] }, { text: "Checked the problems." }],
    },
  ],
  default: [{ text: "Hello." }],
};

describe("real VS Code, the editor's dynamic tools", () => {
  const test = testWithShot(nodeTest, () => page);
  let vs, model, page;
  before(async () => {
    model = await startFakeModel(SCRIPT);
    vs = await startVSCode({ modelUrl: model.url, files: { "bad.json": '{ "a": 1,, }\n' } });
    page = await vs.open({ width: 1280, height: 760 });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("diagnostics returns a file's Problems", async () => {
    const f = await openPanel(page);
    await waitConnected(f);
    // Open bad.json: VS Code's JSON language server reports its error.
    await runCommand(page, "Go to File...");
    const q = page.locator(".quick-input-widget input");
    await q.fill("bad.json");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "bad.json" }).first().waitFor();
    await q.press("Enter");
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: 30000 });
    await send(f, "check the problems");
    await f.locator(".msg.agent", { hasText: "Checked the problems." }).waitFor({ timeout: 30000 });
    const tool = f.locator("details.tool", { hasText: "diagnostics" }).last();
    await tool.locator("summary").click();
    const out = await tool.locator("pre.output").textContent();
    await shot(page, "20-dynamic-diagnostics");
    assert.match(out, /^bad\.json:1:\d+: error: .+/m, out);
    assert.match(await tool.locator(".badge").textContent(), /done/);
  });
});
