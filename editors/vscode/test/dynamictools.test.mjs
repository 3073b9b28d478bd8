// The editor's dynamic tools (src/dynamictools.ts): what thread/start
// declares and how item/tool/call is answered, against a fake EditorHost.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { lib } from "./helpers.mjs";

const { callDynamicTool, dynamicToolSpecs, MAX_PROBLEMS } = lib;

function host(problems = [], root = "/ws") {
  const opened = [];
  return {
    opened,
    problems: (path) => (path === undefined ? problems : problems.filter((p) => p.path === path)),
    openFile: async (path, line) => {
      if (path.endsWith("missing.ts")) throw new Error("file not found");
      opened.push([path, line]);
    },
    root: () => root ?? undefined,
  };
}
const call = (h, tool, args, namespace) =>
  callDynamicTool(h, { threadId: "t", turnId: "u", callId: "c", tool, arguments: args, ...(namespace ? { namespace } : {}) });
const out = (r) => r.contentItems.map((c) => c.text).join("\n");

describe("dynamic tools", () => {
  test("declares diagnostics and open_file as function tools with object schemas", () => {
    assert.deepEqual(dynamicToolSpecs.map((s) => [s.type, s.name]), [["function", "diagnostics"], ["function", "open_file"]]);
    for (const s of dynamicToolSpecs) {
      assert.equal(s.inputSchema.type, "object");
      assert.ok(/^[A-Za-z0-9_-]{1,64}$/.test(s.name));
      assert.ok(s.description.length > 10);
    }
    assert.deepEqual(dynamicToolSpecs[1].inputSchema.required, ["path"]);
  });

  test("diagnostics of a file: its Problems, errors first, 1-based, relative to the workspace", async () => {
    const h = host([
      { path: "/ws/src/a.ts", line: 9, character: 4, severity: "warning", message: "unused  variable\n x", source: "eslint" },
      { path: "/ws/src/a.ts", line: 2, character: 0, severity: "error", message: "Cannot find name 'foo'.", source: "ts" },
      { path: "/ws/src/b.ts", line: 0, character: 0, severity: "error", message: "elsewhere" },
    ]);
    const r = await call(h, "diagnostics", { path: "src/a.ts" });
    assert.equal(r.success, true);
    assert.equal(out(r), "src/a.ts:3:1: error: Cannot find name 'foo'. (ts)\nsrc/a.ts:10:5: warning: unused variable x (eslint)");
    assert.equal(out(await call(h, "diagnostics", { path: "/ws/src/c.ts" })), "No problems in src/c.ts.");
  });

  test("diagnostics of the workspace: every file's, capped", async () => {
    const many = Array.from({ length: MAX_PROBLEMS + 5 }, (_, i) => ({ path: "/ws/x.ts", line: i, character: 0, severity: "hint", message: `h${i}` }));
    const r = await call(host(many), "diagnostics", {});
    const lines = out(r).split("\n");
    assert.equal(lines.length, MAX_PROBLEMS + 1);
    assert.equal(lines[0], "x.ts:1:1: hint: h0");
    assert.equal(lines.at(-1), "... and 5 more.");
    assert.equal(out(await call(host([]), "diagnostics", {})), "No problems in the workspace.");
  });

  test("open_file opens the file at the line", async () => {
    const h = host();
    const r = await call(h, "open_file", { path: "src/a.ts", line: 7 });
    assert.equal(r.success, true);
    assert.deepEqual(h.opened, [["/ws/src/a.ts", 7]]);
    assert.match(out(r), /Opened src\/a.ts at line 7/);
  });

  test("bad arguments, unknown tools and failures are unsuccessful answers that say why", async () => {
    const h = host();
    for (const [tool, args, want, ns] of [
      ["open_file", {}, /path \(a string\) is required/],
      ["open_file", { path: "a.ts", line: 0 }, /line must be an integer/],
      ["open_file", { path: "missing.ts" }, /could not open missing.ts: file not found/],
      ["diagnostics", { path: 3 }, /path must be a string/],
      ["diagnostics", [], /arguments must be an object/],
      ["format", {}, /unknown tool format/],
      ["diagnostics", {}, /unknown tool ed\/diagnostics/, "ed"],
    ]) {
      const r = await call(h, tool, args, ns);
      assert.equal(r.success, false, `${tool} ${JSON.stringify(args)}`);
      assert.match(out(r), want);
    }
    const noRoot = host([], null);
    const r = await call(noRoot, "diagnostics", { path: "a.ts" });
    assert.equal(r.success, false);
    assert.match(out(r), /no workspace folder/);
    assert.deepEqual(h.opened, []);
  });
});
