// Bundles the extension (Node, CommonJS, "vscode" external), the webview
// script (browser IIFE) and the library the Node tests import.
//   node scripts/build.mjs [--production] [--watch]
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const common = {
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "warning",
  absWorkingDir: root,
};

const builds = [
  {
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
  },
  {
    ...common,
    entryPoints: ["webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2020",
  },
];
if (!production) {
  builds.push({
    ...common,
    sourcemap: "inline",
    entryPoints: ["test/lib.ts"],
    outfile: "out/lib.cjs",
    platform: "node",
    format: "cjs",
    target: "node18",
  });
}

function copyCss() {
  mkdirSync(join(root, "dist"), { recursive: true });
  copyFileSync(join(root, "webview/style.css"), join(root, "dist/webview.css"));
  // Mermaid's own browser build, loaded by the webview only when a run's
  // plan is shown (webview/runs.ts): large, so never part of webview.js.
  copyFileSync(join(root, "node_modules/mermaid/dist/mermaid.min.js"), join(root, "dist/mermaid.js"));
}

if (watch) {
  copyCss();
  for (const b of builds) {
    const ctx = await esbuild.context(b);
    await ctx.watch();
  }
  console.log("watching…");
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  copyCss();
  console.log(`built dist/ (${production ? "production" : "development"})`);
}
