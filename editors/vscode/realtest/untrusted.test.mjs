// The extension in a folder VS Code does not trust: present, says why it
// does not start apserver, and starts once the folder is trusted.
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { STATUS_ITEM, apserverPids, panelFrame, runCommand, shot, startFakeModel, startVSCode, uncaughtErrors, waitConnected } from "./harness.mjs";
import { testWithShot } from "./harness.mjs";

describe("real VS Code, untrusted folder", () => {
  const test = testWithShot(nodeTest, () => page);
  let vs, model, page;
  before(async () => {
    model = await startFakeModel({ default: [{ text: "trusted now" }] });
    // No trust prompt at startup (whether VS Code shows one first is a race
    // with the rest of the workbench): the folder opens in Restricted Mode.
    vs = await startVSCode({
      trusted: false,
      modelUrl: model.url,
      files: { "README.md": "# a project\n" },
      settings: { "security.workspace.trust.startupPrompt": "never" },
    });
    page = await vs.open(undefined, { waitForExtension: false });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("the icon, the status item and the panel explain; nothing starts until the folder is trusted", async () => {
    await page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first().waitFor({ timeout: 60000 });
    // Issue 15 item 2: the extension was silently absent.
    await page.locator('.activitybar [aria-label*="apserver"]').first().waitFor({ timeout: 30000 });
    await page.locator(STATUS_ITEM).waitFor();
    await runCommand(page, "apserver: Open Panel");
    const f = panelFrame(page);
    await f.locator("#untrusted", { hasText: "not trusted" }).waitFor({ timeout: 20000 });
    await shot(page, "10-untrusted-folder");
    assert.deepEqual(apserverPids(vs.dataDir), []);

    await f.locator('button[data-action="manageTrust"]').click();
    await page.locator(".workspace-trust-editor").waitFor({ timeout: 20000 });
    await page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust$/ }).first().click();
    await waitConnected(f);
    assert.equal(apserverPids(vs.dataDir).length, 1);
  });

  test("closing the window: the extension host shuts down, no uncaught error in its log", async () => {
    await vs.closeWindow(page);
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });
});
