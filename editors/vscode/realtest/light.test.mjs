// Light theme, the README's screenshot, and the extension's own page in
// the Extensions view (README images, links and the icon).
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { contrast, copyShot, luminance, openPanel, until, runCommand, send, shot, startFakeModel, startVSCode, uncaughtErrors, waitConnected } from "./harness.mjs";
import { testWithShot } from "./harness.mjs";

const SCRIPT = {
  rules: [
    {
      match: "run tests",
      steps: [
        { text: "I'll run the tests first.", reasoning: ["Run the suite before changing anything."], tool_calls: [{ command: "echo 'ok  example.com/app' > test.log && cat test.log" }] },
        { text: "All tests pass." },
      ],
    },
  ],
  default: [{ text: "Hello! Ask me to change something in this folder." }],
};

describe("real VS Code, light theme", () => {
  const test = testWithShot(nodeTest, () => page);
  let vs, model, page;
  before(async () => {
    model = await startFakeModel(SCRIPT);
    vs = await startVSCode({ theme: "Default Light Modern", modelUrl: model.url, files: { "main.go": "package main\n" } });
    page = await vs.open({ width: 1280, height: 760 });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("the panel follows the light theme; a command waits for approval", async () => {
    const f = await openPanel(page);
    await waitConnected(f);
    await send(f, "run tests please");
    await f.locator(".approval").waitFor({ timeout: 20000 });
    const c = await f.locator("body").evaluate((b) => {
      const s = getComputedStyle(b);
      const slider = getComputedStyle(document.querySelector(".switch .slider"));
      return { bg: s.backgroundColor, fg: s.color, track: slider.backgroundColor, trackBorder: slider.borderTopColor };
    });
    assert.ok(luminance(c.bg) > 0.7, `background ${c.bg}`);
    assert.ok(contrast(c.fg, c.bg) > 4.5, `text ${c.fg} on ${c.bg}`);
    assert.ok(contrast(c.trackBorder, c.bg) >= 3 || contrast(c.track, c.bg) >= 3, `switch track ${c.track} / ${c.trackBorder} on ${c.bg}`);
    const file = await shot(page, "11-light-approval");
    if (process.env.UPDATE_SCREENSHOT) {
      const ext = join(import.meta.dirname, "..");
      copyShot(file, join(ext, "media", "screenshot.png"));
      copyShot(file, join(ext, "..", "..", "docs", "images", "vscode-panel.png"));
    }
    await f.locator('.approval button[data-decision="accept"]').click();
    await f.locator(".msg.agent", { hasText: "All tests pass." }).waitFor({ timeout: 30000 });
  });

  test("the extension's page: the README's images load, its links stay in the package, and it has an icon", async () => {
    await runCommand(page, "Extensions: Show Installed Extensions");
    const row = page.locator(".extensions-viewlet .monaco-list-row", { hasText: "apserver" }).first();
    await row.waitFor({ timeout: 30000 });
    await row.click();
    const editor = page.locator(".extension-editor");
    await editor.waitFor({ timeout: 20000 });
    const icon = editor.locator(".header .icon").first();
    await icon.waitFor();
    const iconInfo = await icon.evaluate((img) => ({ src: img.getAttribute("src") ?? "", w: img.naturalWidth }));
    // Issue 15 item 4: no icon, a broken image and a broken link.
    assert.doesNotMatch(iconInfo.src, /defaultIcon|default-icon/i, `icon ${iconInfo.src}`);
    assert.ok(iconInfo.w > 0, `icon ${iconInfo.src} did not load`);
    // The README is a webview of its own: find the frame that shows it.
    const readme = await until(async () => {
      for (const fr of page.frames()) {
        const h = await fr.evaluate(() => document.querySelector("h1")?.textContent ?? "").catch(() => "");
        if (h.includes("apserver for VS Code")) return fr;
      }
      return undefined;
    }, 30000, "the README in the extension's page");
    const imgs = readme.locator("img");
    await imgs.first().waitFor();
    const broken = await imgs.evaluateAll((list) => Promise.all(list.map(async (img) => {
      if (!img.complete) await new Promise((r) => { img.onload = img.onerror = r; });
      return img.naturalWidth > 0 ? null : img.getAttribute("src");
    })));
    assert.deepEqual(broken.filter(Boolean), []);
    const outside = await readme.locator("a[href]").evaluateAll((list) => list.map((a) => a.getAttribute("href")).filter((h) => /(^|\/)\.\.\//.test(h)));
    assert.deepEqual(outside, []);
    await shot(page, "12-extension-page");
  });

  test("closing the window: the extension host shuts down, no uncaught error in its log", async () => {
    await vs.closeWindow(page);
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });
});
