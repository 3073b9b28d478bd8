// The client module against the real apserver binary and its fake model.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync, chmodSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  apserverBin,
  lib,
  serveArgs,
  serveEnv,
  startFakeModel,
  tempDir,
  text,
  until,
  waitForNotification,
} from "./helpers.mjs";

const { AppServerClient, JsonlDecoder, findApserver, RequestError, CONNECTION_CLOSED } = lib;

describe("JsonlDecoder", () => {
  test("carries a partial last line over to the next chunk", () => {
    const d = new JsonlDecoder();
    assert.deepEqual(d.push(Buffer.from('{"a":1}\n{"b"')), ['{"a":1}']);
    assert.equal(d.pending, '{"b"');
    assert.deepEqual(d.push(Buffer.from(':2}\n\n{"c":3}\r\n')), ['{"b":2}', '{"c":3}']);
    assert.deepEqual(d.end(), []);
  });
  test("keeps a UTF-8 character split across chunks intact", () => {
    const d = new JsonlDecoder();
    const bytes = Buffer.from('{"t":"héllo ✓"}\n');
    const cut = bytes.indexOf(0xe2) + 1; // inside the 3-byte ✓
    assert.deepEqual(d.push(bytes.subarray(0, cut)), []);
    const lines = d.push(bytes.subarray(cut));
    assert.equal(JSON.parse(lines[0]).t, "héllo ✓");
  });
  test("returns an unterminated last line at the end", () => {
    const d = new JsonlDecoder();
    d.push('{"x":1}');
    assert.deepEqual(d.end(), ['{"x":1}']);
  });
});

describe("binary lookup", () => {
  let dir;
  before(() => {
    dir = tempDir();
  });
  after(() => dir.remove());

  test("setting, then APSERVER_PATH, then bundled, then PATH; each checked with --version", async () => {
    const bin = apserverBin();
    // setting wins
    let r = await findApserver({ setting: bin, env: { PATH: "" } });
    assert.equal(r.found.source, "setting");
    assert.match(r.found.version, /apserver/);
    // a broken setting falls through to the env var, and says why
    const broken = join(dir.path, "broken");
    writeFileSync(broken, "#!/bin/sh\nexit 3\n");
    chmodSync(broken, 0o755);
    r = await findApserver({ setting: broken, env: { APSERVER_PATH: bin, PATH: "" } });
    assert.equal(r.found.source, "env");
    assert.match(r.tried[0], /setting apserver.path = .*broken/);
    // bundled bin/apserver inside the extension
    const ext = join(dir.path, "ext");
    mkdirSync(join(ext, "bin"), { recursive: true });
    symlinkSync(bin, join(ext, "bin", "apserver"));
    r = await findApserver({ env: { PATH: "" }, extensionPath: ext });
    assert.equal(r.found.source, "bundled");
    // PATH
    const pathDir = join(dir.path, "pathdir");
    mkdirSync(pathDir);
    symlinkSync(bin, join(pathDir, "apserver"));
    r = await findApserver({ env: { PATH: `/nonexistent:${pathDir}` }, extensionPath: join(dir.path, "none") });
    assert.equal(r.found.source, "path");
    assert.equal(r.found.path, join(pathDir, "apserver"));
    // nothing at all
    r = await findApserver({ env: { PATH: "/nonexistent" } });
    assert.equal(r.found, undefined);
    assert.ok(r.tried.length > 0);
  });
});

describe("AppServerClient against apserver + fake-model", () => {
  let model;
  let data;
  const logs = [];
  /** @type {InstanceType<typeof AppServerClient>[]} */
  const clients = [];

  function makeClient(extra = {}) {
    const c = new AppServerClient({
      command: apserverBin(),
      args: serveArgs(model.url, data.path),
      env: serveEnv(),
      cwd: data.path,
      clientInfo: { name: "node-test", version: "1" },
      log: (l) => logs.push(l),
      restartDelayMs: 50,
      ...extra,
    });
    clients.push(c);
    return c;
  }

  async function startThread(c, settings = {}) {
    const ws = join(data.path, "ws");
    mkdirSync(ws, { recursive: true });
    const res = await c.request("thread/start", { cwd: ws, ...settings });
    return { threadId: res.thread.id, ws };
  }

  before(async () => {
    apserverBin();
    model = await startFakeModel();
    data = tempDir();
  });
  after(async () => {
    for (const c of clients) await c.stop();
    await model.stop();
    data.remove();
  });

  test("a streaming turn: deltas arrive, then turn/completed", async () => {
    const c = makeClient();
    const info = await c.start();
    assert.match(info.userAgent, /node-test/);
    assert.equal(c.state, "ready");
    const { threadId } = await startThread(c);
    const deltas = [];
    const off = c.onNotification.on((m, p) => {
      if (m === "item/agentMessage/delta") deltas.push(p.delta);
    });
    const completed = waitForNotification(c, (m, p) => m === "turn/completed" && p.threadId === threadId, 15000, "turn/completed");
    const itemDone = waitForNotification(c, (m, p) => m === "item/completed" && p.item.type === "agentMessage", 15000, "agent message");
    const res = await c.request("turn/start", { threadId, input: text("say hello") });
    assert.equal(res.turn.status, "inProgress");
    const { params: done } = await completed;
    const { params: item } = await itemDone;
    off();
    assert.equal(done.turn.status, "completed");
    assert.ok(deltas.length >= 2, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(""), item.item.text);
    assert.match(item.item.text, /hello there/);
    await c.stop();
    assert.equal(c.state, "stopped");
  });

  test("an approval round trip: accept, then the command's output arrives", async () => {
    const c = makeClient();
    const asked = [];
    c.handle("item/commandExecution/requestApproval", (params) => {
      asked.push(params);
      return { decision: "accept" };
    });
    await c.start();
    const { threadId, ws } = await startThread(c, { approvalPolicy: "untrusted" });
    const cmdDone = waitForNotification(
      c,
      (m, p) => m === "item/completed" && p.item.type === "commandExecution",
      15000,
      "command item/completed",
    );
    const resolved = waitForNotification(c, (m) => m === "serverRequest/resolved", 15000, "serverRequest/resolved");
    const completed = waitForNotification(c, (m, p) => m === "turn/completed" && p.threadId === threadId, 15000, "turn/completed");
    await c.request("turn/start", { threadId, input: text("please run tests") });
    const { params: cmd } = await cmdDone;
    await resolved;
    const { params: done } = await completed;
    assert.equal(asked.length, 1);
    assert.equal(asked[0].threadId, threadId);
    assert.match(asked[0].command, /echo hi/);
    assert.equal(cmd.item.status, "completed");
    assert.equal(cmd.item.exitCode, 0);
    assert.match(cmd.item.aggregatedOutput, /hi/);
    assert.equal(readFileSync(join(ws, "out.txt"), "utf8").trim(), "hi");
    assert.equal(done.turn.status, "completed");
    await c.stop();
  });

  test("a declined approval: the command does not run and the turn goes on", async () => {
    const c = makeClient();
    c.handle("item/commandExecution/requestApproval", () => ({ decision: "decline" }));
    await c.start();
    const { threadId } = await startThread(c, { approvalPolicy: "untrusted" });
    const cmdDone = waitForNotification(c, (m, p) => m === "item/completed" && p.item.type === "commandExecution");
    const completed = waitForNotification(c, (m, p) => m === "turn/completed" && p.threadId === threadId);
    await c.request("turn/start", { threadId, input: text("run tests now") });
    assert.equal((await cmdDone).params.item.status, "declined");
    assert.equal((await completed).params.turn.status, "completed");
    await c.stop();
  });

  test("interrupt: the turn ends interrupted", async () => {
    const c = makeClient();
    await c.start();
    const { threadId } = await startThread(c);
    const firstDelta = waitForNotification(c, (m) => m === "item/agentMessage/delta", 15000, "first delta");
    const completed = waitForNotification(c, (m, p) => m === "turn/completed" && p.threadId === threadId, 15000, "turn/completed");
    const { turn } = await c.request("turn/start", { threadId, input: text("go slow please") });
    await firstDelta;
    await c.request("turn/interrupt", { threadId, turnId: turn.id });
    const { params } = await completed;
    assert.equal(params.turn.id, turn.id);
    assert.equal(params.turn.status, "interrupted");
    await c.stop();
  });

  test("a crash (kill -9): the client reports it, restarts, and initialize works again", async () => {
    const c = makeClient();
    await c.start();
    const { threadId } = await startThread(c);
    const firstPid = c.pid;
    const crashes = [];
    const states = [];
    c.onCrash.on((info) => crashes.push(info));
    c.onStateChange.on((s) => states.push(s));
    const restarted = new Promise((r) => c.onRestarted.on(r));
    // A request in flight when the server dies is rejected, not left hanging.
    const inflight = c.request("turn/start", { threadId, input: text("go slow please") });
    await waitForNotification(c, (m) => m === "item/agentMessage/delta", 15000, "first delta");
    process.kill(firstPid, "SIGKILL");
    const info = await restarted;
    await inflight.catch(() => undefined); // answered before the kill, or rejected by it
    assert.equal(crashes.length, 1);
    assert.equal(crashes[0].signal, "SIGKILL");
    assert.equal(crashes[0].willRestart, true);
    assert.match(crashes[0].message, /exited unexpectedly \(signal SIGKILL\); restarting/);
    assert.deepEqual(states.slice(0, 2), ["restarting", "ready"]);
    assert.match(info.userAgent, /node-test/);
    assert.notEqual(c.pid, firstPid);
    assert.equal(c.state, "ready");
    // The new server serves: the old thread resumes (its turn was interrupted) and a new turn runs.
    const resumed = await c.request("thread/resume", { threadId });
    assert.equal(resumed.thread.id, threadId);
    assert.ok(resumed.thread.turns.every((t) => t.status !== "inProgress"));
    const completed = waitForNotification(c, (m, p) => m === "turn/completed" && p.threadId === threadId);
    await c.request("turn/start", { threadId, input: text("hello again") });
    assert.equal((await completed).params.turn.status, "completed");
    await c.stop();
  });

  test("pending requests are rejected when the server dies, and restarts give up past the limit", async () => {
    const c = makeClient({ maxRestarts: 0 });
    await c.start();
    const failed = new Promise((r) => c.onStateChange.on((s, detail) => s === "failed" && r(detail)));
    const crash = new Promise((r) => c.onCrash.on(r));
    const pending = c.request("thread/list", {}).then(
      () => "answered",
      (e) => e,
    );
    process.kill(c.pid, "SIGKILL");
    const detail = await failed;
    const info = await crash;
    assert.equal(info.willRestart, false);
    assert.match(detail, /not restarting it/);
    const r = await pending;
    if (r !== "answered") {
      assert.ok(r instanceof RequestError);
      assert.equal(r.code, CONNECTION_CLOSED);
    }
    await assert.rejects(c.request("thread/list", {}), /not running/);
    // A manual restart brings it back.
    await c.restart();
    assert.equal(c.state, "ready");
    await c.request("thread/list", {});
    await c.stop();
  });

  test("a binary that is not there fails start with a clear error", async () => {
    const c = new AppServerClient({ command: "/nonexistent/apserver", log: () => undefined });
    await assert.rejects(c.start(), /ENOENT/);
    assert.equal(c.state, "failed");
  });

  test("stderr goes to the log sink", async () => {
    await until(() => logs.some((l) => /level=INFO/.test(l)), 5000, "a server log line");
  });
});
