// Shared helpers for the Node tests: the real apserver binary, its scripted
// fake model, and small waiting utilities.
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

export const extDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const repoRoot = resolve(extDir, "../..");
const require = createRequire(import.meta.url);
/** The bundled library under test (out/lib.cjs, built by scripts/build.mjs). */
export const lib = require(join(extDir, "out/lib.cjs"));

/** The apserver binary: $APSERVER_TEST_BIN, else .test-bin/apserver (built with go build if missing). */
export function apserverBin() {
  if (process.env.APSERVER_TEST_BIN) return process.env.APSERVER_TEST_BIN;
  const bin = join(extDir, ".test-bin", "apserver");
  if (!existsSync(bin)) {
    mkdirSync(dirname(bin), { recursive: true });
    execFileSync("go", ["build", "-o", bin, "./cmd/apserver"], { cwd: repoRoot, stdio: "inherit" });
  }
  return bin;
}

export function tempDir(prefix = "apserver-vscode-") {
  const d = mkdtempSync(join(tmpdir(), prefix));
  return { path: d, remove: () => rmSync(d, { recursive: true, force: true }) };
}

/** The script every test's fake model answers with. */
export const SCRIPT = {
  rules: [
    {
      match: "run tests",
      steps: [
        { text: "I'll run them.", tool_calls: [{ name: "exec_command", arguments: { cmd: "echo hi > out.txt && cat out.txt" } }] },
        { text: "All done." },
      ],
    },
    {
      match: "edit the greeting",
      steps: [
        { text: "Editing.", tool_calls: [{ name: "edit_file", arguments: { path: "greet.txt", old_string: "hello", new_string: "goodbye" } }] },
        { text: "Edited." },
      ],
    },
    { match: "slow", steps: [{ deltas: 400, delta_text: "tick ", inter_delta_us: 25000 }] },
  ],
  default: [{ text: "hello there, this answer is streamed in several small pieces", inter_delta_us: 15000 }],
};

/** Starts `apserver fake-model`; resolves to {url, stop}. */
export async function startFakeModel(script = SCRIPT) {
  const dir = tempDir("apserver-fake-");
  const file = join(dir.path, "script.json");
  writeFileSync(file, JSON.stringify(script));
  const child = spawn(apserverBin(), ["fake-model", "--script", file], { stdio: ["pipe", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout });
  const url = await new Promise((resolveUrl, reject) => {
    const t = setTimeout(() => reject(new Error("fake-model printed no URL")), 15000);
    rl.once("line", (l) => {
      clearTimeout(t);
      resolveUrl(l.trim());
    });
    child.once("exit", (code) => reject(new Error(`fake-model exited ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((r) => {
        child.once("exit", () => {
          dir.remove();
          r();
        });
        child.stdin.end();
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}

/** Arguments for `apserver serve` against the fake model. */
export function serveArgs(url, dataDir) {
  return ["serve", "--data-dir", dataDir, "--base-url", url, "--model", "scripted"];
}

export function serveEnv() {
  return { ...process.env, OPENAI_API_KEY: "test-key" };
}

/** Resolves with the first notification matching pred (rejects after timeoutMs). */
export function waitForNotification(client, pred, timeoutMs = 15000, label = "notification") {
  return new Promise((resolveN, reject) => {
    const t = setTimeout(() => {
      off();
      reject(new Error(`timed out waiting for ${label}`));
    }, timeoutMs);
    const off = client.onNotification.on((method, params) => {
      if (pred(method, params)) {
        clearTimeout(t);
        off();
        resolveN({ method, params });
      }
    });
  });
}

/** Polls cond() until true. */
export async function until(cond, timeoutMs = 15000, label = "condition") {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${label}`);
}

export function text(t) {
  return [{ type: "text", text: t, text_elements: [] }];
}
