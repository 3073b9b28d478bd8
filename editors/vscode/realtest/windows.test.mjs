// A remote VS Code keeps a closed tab's extension host (and its apserver)
// for the reconnection grace time; a new window must not start a second
// apserver on the same data dir.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { apserverPids, openPanel, send, startFakeModel, startVSCode, until, waitConnected } from "./harness.mjs";

describe("real VS Code, a closed tab and a new window", () => {
  let vs, model;
  before(async () => {
    model = await startFakeModel({ default: [{ text: "answered from the new window" }] });
    vs = await startVSCode({ modelUrl: model.url });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  test("one apserver per data dir: the new window's takes over", async () => {
    const first = await vs.open();
    const f1 = await openPanel(first);
    await waitConnected(f1);
    const [old] = await until(() => { const p = apserverPids(vs.dataDir); return p.length === 1 && p; }, 20000, "the first apserver");
    await first.context().close();

    const second = await vs.open();
    const f2 = await openPanel(second);
    await waitConnected(f2);
    // Issue 15 item 10: the closed tab's apserver lived on beside the new one.
    await until(() => !apserverPids(vs.dataDir).includes(old), 20000, `the closed window's apserver (pid ${old}) to stop`);
    assert.equal(apserverPids(vs.dataDir).length, 1, `apserver processes: ${apserverPids(vs.dataDir)}`);
    await send(f2, "hello");
    await f2.locator(".msg.agent", { hasText: "answered from the new window" }).waitFor({ timeout: 20000 });
  });
});
