// The extension in a folder VS Code does not trust: present, says why it
// does not start apserver, and starts once the folder is trusted.
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { apserverPids, panelFrame, runCommand, shot, startFakeModel, startVSCode, uncaughtErrors, waitConnected } from "./harness.mjs";
import { testWithShot } from "./harness.mjs";

describe("real VS Code, untrusted folder", () => {
  const test = testWithShot(nodeTest, () => page);
  let vs, model, page;
  before(async () => {
    model = await startFakeModel({ default: [{ text: "trusted now" }] });
    vs = await startVSCode({ trusted: false, modelUrl: model.url, files: { "README.md": "# a project\n" } });
    page = await vs.open(undefined, { waitForExtension: false });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("the icon, the status item and the panel explain; nothing starts until the folder is trusted", async () => {
    // VS Code may ask first; then the answer is "no". Either way it ends in Restricted Mode.
    const dialog = page.locator(".monaco-dialog-box");
    const restricted = page.locator(".statusbar-item", { hasText: "Restricted Mode" }).first();
    await Promise.race([dialog.waitFor({ timeout: 60000 }), restricted.waitFor({ timeout: 60000 })]);
    if (await dialog.isVisible()) {
      await dialog.locator(".monaco-button", { hasText: /No, I don.t trust/ }).click();
      await dialog.waitFor({ state: "detached" });
    }
    await restricted.waitFor();
    // Issue 15 item 2: the extension was silently absent.
    await page.locator('.activitybar [aria-label*="apserver"]').first().waitFor({ timeout: 30000 });
    await page.locator(".statusbar-item", { hasText: "apserver" }).first().waitFor();
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

  test("no uncaught error in the extension host log", async () => {
    await vs.stop();
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });
});
