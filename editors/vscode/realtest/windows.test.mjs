// Windows coming and going in a remote VS Code (code-server): each window
// has its own extension host. Closing a tab shuts that host down (the
// extension deactivates while apserver writes its last lines); a tab lost
// without a goodbye (its browser killed, the network gone) keeps its host, and its
// apserver, for the reconnection grace time, so a new window must not start
// a second apserver on the same data dir.
import { after, before, describe, test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { apserverPids, extHosts, openPanel, send, startFakeModel, startVSCode, testWithShot, uncaughtErrors, until, waitConnected } from "./harness.mjs";

describe("real VS Code, windows closed and lost", () => {
  let vs, model, page;
  const test = testWithShot(nodeTest, () => page);
  before(async () => {
    model = await startFakeModel({ default: [{ text: "answered from the new window" }] });
    // VS Code's default: a lost window's extension host lives on for 3 hours.
    vs = await startVSCode({ modelUrl: model.url, graceTime: 10800 });
  });
  after(async () => {
    await vs?.stop();
    await model?.stop();
  });

  const connectedPid = async () => {
    const f = await openPanel(page);
    await waitConnected(f);
    const [pid] = await until(() => { const p = apserverPids(vs.dataDir); return p.length === 1 && p; }, 20000, "one apserver");
    return { f, pid };
  };

  test("closing the tab: the extension host shuts down, apserver stops, no uncaught error", async () => {
    page = await vs.open();
    const { pid } = await connectedPid();
    await vs.closeWindow(page);
    const [host] = extHosts(vs.userData);
    assert.ok(host?.exited, `extension host: ${JSON.stringify(host)}`);
    assert.deepEqual(apserverPids(vs.dataDir), [], `apserver ${pid} outlived its window`);
    // Issue 15 item 1: apserver's last stderr lines came after the output
    // channel was disposed, and appending them threw `Channel has been closed`.
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });

  test("a tab lost without closing: the new window's apserver takes over, one per data dir", async () => {
    page = await vs.open(undefined, { ownBrowser: true });
    const { pid: old } = await connectedPid();
    await vs.loseWindow(page);
    // The lost window's extension host waits for it to come back, with its apserver.
    assert.deepEqual(apserverPids(vs.dataDir), [old]);

    page = await vs.open();
    const f = await openPanel(page);
    await waitConnected(f);
    // Issue 15 item 10: the lost tab's apserver lived on beside the new one.
    await until(() => !apserverPids(vs.dataDir).includes(old), 20000, `the lost window's apserver (pid ${old}) to stop`);
    assert.equal(apserverPids(vs.dataDir).length, 1, `apserver processes: ${apserverPids(vs.dataDir)}`);
    await send(f, "hello");
    await f.locator(".msg.agent", { hasText: "answered from the new window" }).waitFor({ timeout: 20000 });
    assert.deepEqual(uncaughtErrors(vs.extHostLog()), []);
  });
});
