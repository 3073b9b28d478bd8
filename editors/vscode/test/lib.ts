// Everything the Node tests exercise that has no "vscode" import, bundled
// into out/lib.cjs by scripts/build.mjs.
export * from "../src/client";
export * from "../src/jsonl";
export * from "../src/binary";
export * from "../src/store";
export * from "../src/diffs";
export * from "../src/diffstat";
export * from "../src/html";
export * from "../src/messages";
export { renderMarkdown, renderInline, escapeHtml, safeUrl } from "../webview/markdown";
export * from "../src/serverlock";
export * from "../src/runs";
export * from "../src/dynamictools";
export * from "../src/blueprints";
export * from "../src/project";
export * from "../src/mcp";
