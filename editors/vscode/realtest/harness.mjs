// The real-VS-Code harness: code-server with the packaged .vsix installed,
// fresh HOME and XDG dirs per instance, driven by playwright-core in
// Debian's chromium. The model is `apserver fake-model` (scripted, offline).
//
// Environment (set by realtest/run.sh):
//   APSERVER_VSIX         the .vsix under test
//   APSERVER_CODE_SERVER  "NODE ENTRY.js": how to run code-server
//   APSERVER_TEST_BIN     apserver, for fake-model and process checks
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync, readdirSync, readFileSync, statSync, existsSync, copyFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startFakeModel, tempDir } from "../test/helpers.mjs";

export const EXT_ID = "apserver.apserver-vscode";
/** The extension's status bar item (VS Code gives it the extension's id). */
export const STATUS_ITEM = `.statusbar-item[id="${EXT_ID}"]`;
export const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), "..", "test-results", "real");
mkdirSync(ARTIFACTS, { recursive: true });

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export { startFakeModel };

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function codeServerCommand() {
  const cs = process.env.APSERVER_CODE_SERVER;
  if (!cs) throw new Error("APSERVER_CODE_SERVER is not set (run realtest/run.sh)");
  const [node, entry] = cs.split(" ");
  return { node, entry };
}

/**
 * Starts code-server on a fresh profile with the .vsix installed.
 * opts: { trusted (default true), settings, files: {relpath: text}, modelUrl, theme,
 *         graceTime (s, default 20: how long a lost window's extension host waits) }
 */
export async function startVSCode(opts = {}) {
  const root = tempDir("apserver-real-");
  const home = join(root.path, "home");
  const workspace = join(root.path, "workspace");
  const dataDir = join(root.path, "apserver-data");
  const userData = join(root.path, "user-data");
  const extensions = join(root.path, "extensions");
  for (const d of [home, workspace, dataDir, userData, extensions, join(userData, "User")]) mkdirSync(d, { recursive: true });
  for (const [rel, text] of Object.entries(opts.files ?? {})) {
    mkdirSync(dirname(join(workspace, rel)), { recursive: true });
    writeFileSync(join(workspace, rel), text);
  }
  const settings = {
    "workbench.startupEditor": "none",
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "telemetry.telemetryLevel": "off",
    "extensions.autoUpdate": false,
    "extensions.autoCheckUpdates": false,
    "update.mode": "none",
    "chat.disableAIFeatures": true,
    "workbench.colorTheme": opts.theme ?? "Default Dark Modern",
    "apserver.approvalPolicy": "untrusted",
    "apserver.extraArgs": opts.modelUrl ? ["--data-dir", dataDir, "--base-url", opts.modelUrl, "--model", "scripted"] : ["--data-dir", dataDir],
    "apserver.env": { OPENAI_API_KEY: "test-key" },
    ...(opts.settings ?? {}),
  };
  writeFileSync(join(userData, "User", "settings.json"), JSON.stringify(settings, null, 2));
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_STATE_HOME: join(home, ".local/state"),
    APSERVER_PATH: "",
  };
  delete env.APSERVER_PATH;
  const { node, entry } = codeServerCommand();
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions, "--disable-telemetry", "--disable-update-check"];
  execFileSync(node, [entry, ...common, "--install-extension", process.env.APSERVER_VSIX], { env, stdio: "pipe", timeout: 180000 });
  const port = await freePort();
  const args = [entry, ...common, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-getting-started-override"];
  if (opts.trusted !== false) args.push("--disable-workspace-trust");
  // A window that goes away without telling its extension host (the
  // terminate message is sent from the closing page and can be lost) still
  // has the host shut down, after this many seconds.
  args.push("--reconnection-grace-time", String(opts.graceTime ?? 20));
  args.push(workspace);
  const child = spawn(node, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const output = [];
  const ready = new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`code-server did not start:\n${output.join("\n")}`)), 60000);
    for (const s of [child.stdout, child.stderr]) {
      createInterface({ input: s }).on("line", (l) => {
        output.push(l);
        if (/HTTP server listening/.test(l)) {
          clearTimeout(t);
          resolve();
        }
      });
    }
    child.once("exit", (code) => reject(new Error(`code-server exited ${code}:\n${output.join("\n")}`)));
  });
  await ready;
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS });
  const servers = []; // the browsers of windows opened with ownBrowser
  const vs = {
    root,
    workspace,
    dataDir,
    userData,
    url,
    browser,
    child,
    output,
    pages: [],
    lost: 0,
    /**
     * Opens a window; waits for the extension to be active in it unless
     * waitForExtension is false. ownBrowser: in a browser of its own, which
     * loseWindow can kill.
     */
    async open(viewport = { width: 1280, height: 800 }, { waitForExtension = true, ownBrowser = false } = {}) {
      let b = browser;
      if (ownBrowser) {
        const server = await chromium.launchServer({ executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS });
        b = await chromium.connect(server.wsEndpoint());
        servers.push(server);
      }
      const context = await b.newContext({ viewport, deviceScaleFactor: 1 });
      const page = await context.newPage();
      if (ownBrowser) page.browserServer = servers[servers.length - 1];
      page.on("pageerror", (e) => output.push(`pageerror: ${e.message}`));
      await loadWorkbench(page, () => page.goto(url, { waitUntil: "commit" }));
      if (waitForExtension) await extensionLoaded(page);
      vs.pages.push(page);
      return page;
    },
    /**
     * Closes a window as a user closes its tab: VS Code tells the window's
     * extension host to terminate, which deactivates the extension (and so
     * stops its apserver). Resolves once that extension host has logged its
     * exit; rejects if it has not within timeoutMs.
     */
    async closeWindow(page, timeoutMs = 60000) {
      await page.context().close();
      vs.pages = vs.pages.filter((p) => p !== page);
      await vs.extHostsExited(timeoutMs);
    },
    /**
     * Loses a window without a goodbye, as when the browser dies or the
     * network drops: its browser (opened with ownBrowser) is killed. Its
     * extension host waits for the window to reconnect (the reconnection
     * grace time).
     */
    async loseWindow(page) {
      if (!page.browserServer) throw new Error("loseWindow needs a window opened with ownBrowser");
      await page.browserServer.kill(); // SIGKILL, resolves once the browser has exited
      vs.pages = vs.pages.filter((p) => p !== page);
      vs.lost++;
    },
    /** Waits until only the open (and lost) windows' extension hosts run: the others have logged their exit. */
    async extHostsExited(timeoutMs = 60000) {
      await until(() => {
        const hosts = extHosts(userData);
        return hosts.filter((h) => !h.exited).length <= vs.pages.length + vs.lost;
      }, timeoutMs, `the closed windows' extension hosts to exit: ${JSON.stringify(extHosts(userData))}`);
    },
    /**
     * Stops VS Code the way a user does: closes every window, waits for the
     * extension hosts to shut down (deactivating the extension), then stops
     * code-server and the browser. Resolves to whether every extension host
     * exited by itself (false: one was still running and was killed).
     */
    async stop() {
      let graceful = true;
      if (browser.isConnected()) {
        for (const p of [...vs.pages]) await p.context().close().catch(() => undefined);
        vs.pages = [];
        graceful = await vs.extHostsExited(30000).then(() => true, () => false);
        graceful &&= vs.lost === 0;
      }
      await browser.close().catch(() => undefined);
      for (const sv of servers) await sv.close().catch(() => undefined);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {}
        const t = setTimeout(() => {
          try {
            process.kill(-child.pid, "SIGKILL");
          } catch {}
        }, 15000);
        await exited;
        clearTimeout(t);
      }
      return graceful;
    },
    /** Every extension host log line (all windows, all sessions so far). */
    extHostLog() {
      return readLogs(join(userData, "logs")).join("\n");
    },
  };
  return vs;
}

/**
 * The extension hosts of an instance, from their logs: each logs "Extension
 * host with pid N started" first and "… exiting with code C" last.
 */
export function extHosts(userData) {
  const hosts = [];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name === "remoteexthost.log" || name === "exthost.log") {
        const text = readFileSync(p, "utf8");
        const started = text.match(/Extension host with pid (\d+) started/);
        if (started) hosts.push({ pid: Number(started[1]), exited: /Extension host with pid \d+ exiting with code/.test(text), log: p });
      }
    }
  };
  walk(join(userData, "logs"));
  return hosts;
}

function readLogs(dir) {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...readLogs(p));
    else if (/exthost|remoteagent/i.test(p) && p.endsWith(".log")) out.push(`== ${p}\n${readFileSync(p, "utf8")}`);
  }
  return out;
}

/**
 * Log lines that mean an error escaped the extension: an error whose stack
 * passes through the extension's code or whose text names the extension.
 * Built-in extensions close their own channels at shutdown and VS Code logs
 * errors of its own (paths here contain "apserver" too), so neither the
 * word nor the message alone is enough; a "Channel has been closed" logged
 * without a stack counts, since it cannot be told apart.
 */
export function uncaughtErrors(log) {
  const ours = (s) => s.includes(EXT_ID) || s.includes("apserver-vscode");
  const lines = log.split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (!/\[error\]/i.test(l)) continue;
    const stack = [];
    for (let j = i + 1; j < lines.length && /^\s+at\s/.test(lines[j]); j++) stack.push(lines[j]);
    if (ours(l) || stack.some(ours) || (stack.length === 0 && /Channel has been closed/.test(l))) out.push(l);
  }
  return out;
}

/**
 * Waits until the extension is active in this window: its status bar item
 * shows (activate() creates it), so its commands are in the palette. The
 * activity bar icon is no such sign: after a reload the workbench shows it
 * from its cache before the extension host has even started.
 */
export async function extensionLoaded(page) {
  await page.locator(STATUS_ITEM).waitFor({ timeout: 60000 });
}

/**
 * Navigates (go: goto or reload) and waits for the workbench. Not for the
 * page's load event: the workbench is what counts, and on a busy machine
 * its many scripts can take longer than a navigation's default timeout.
 */
export async function loadWorkbench(page, go) {
  await go();
  await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
}

/** Runs a command through the command palette. */
export async function runCommand(page, title) {
  const input = page.locator(".quick-input-widget input");
  // The last command's palette may still be closing (visible, inert).
  await input.waitFor({ state: "hidden" });
  // F1 pressed while the workbench moves focus (into a webview, say) can be
  // dropped: press again while the palette is not open.
  await until(async () => {
    await page.keyboard.press("F1");
    return input.waitFor({ timeout: 5000 }).then(() => true, () => false);
  }, 30000, "the command palette");
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ timeout: 15000 });
  await input.press("Enter");
}

/**
 * Runs the context-menu item `label` of `target` (a locator). A click that
 * lands while the menu is still settling can be dropped, leaving it open:
 * the item is clicked again until the menu has closed (running an item
 * closes it), opening the menu again if it closed without running.
 */
export async function contextMenu(page, target, label) {
  const menu = page.locator(".context-view .monaco-menu");
  const item = menu.locator(".action-label", { hasText: label });
  let clicked = false;
  await until(async () => {
    if (!(await menu.isVisible())) {
      if (clicked) return true;
      await target.click({ button: "right" });
      await item.waitFor({ timeout: 5000 }).catch(() => {});
    }
    clicked = await item.click({ timeout: 5000 }).then(() => true, () => clicked);
    return menu.waitFor({ state: "hidden", timeout: 2000 }).then(() => clicked, () => false);
  }, 30000, `the context menu's ${label}`);
}

/** The apserver panel's document (the webview's inner frame). */
export function panelFrame(page) {
  return page.frameLocator(`iframe.webview[src*="extensionId=${EXT_ID}"]`).first().frameLocator("#active-frame");
}

/** Opens the panel in the sidebar and waits for it to connect. */
export async function openPanel(page) {
  const f = panelFrame(page);
  // After a reload the view may be restored already; the command reveals it either way.
  await runCommand(page, "apserver: Open Panel");
  await f.locator("body[data-script=loaded]").waitFor({ timeout: 30000 });
  return f;
}

export async function waitConnected(f) {
  await f.locator("#conn.conn-ready").waitFor({ timeout: 30000 });
}

export async function send(f, text) {
  await f.locator("#composer").fill(text);
  await f.locator("#send").click();
}

export async function shot(page, name) {
  const file = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

export function copyShot(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}

/** The apserver processes serving a data dir (by their command line). */
export function apserverPids(dataDir) {
  const pids = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (cmd.includes("serve") && cmd.includes(dataDir)) pids.push(Number(name));
    } catch {}
  }
  return pids;
}

/** Polls cond (sync or async) until it is truthy; throws with label after timeoutMs. */
export async function until(cond, timeoutMs = 20000, label = "condition") {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const rgb = (s) => (s.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
/** Relative luminance of a CSS rgb() colour. */
export function luminance(s) {
  const [r, g, b] = rgb(s).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
/** WCAG contrast ratio of two CSS rgb() colours. */
export function contrast(a, b) {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

/**
 * The most one test may take: a bound for a hang, not a wait (every wait
 * in a test is on a condition, with its own bound). A file of tests has
 * none: on a busy machine the twelve flows take longer than any one does.
 */
export const TEST_TIMEOUT_MS = 240000;

/** A test that saves a screenshot of the page when it fails (test-results/real/FAILED-*.png). */
export function testWithShot(test, getPage) {
  return (name, fn) =>
    test(name, { timeout: TEST_TIMEOUT_MS }, async (t) => {
      try {
        await fn(t);
      } catch (e) {
        const page = getPage();
        if (page && !page.isClosed()) await shot(page, `FAILED-${name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60)}`).catch(() => undefined);
        throw e;
      }
    });
}
