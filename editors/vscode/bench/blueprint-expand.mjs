// How long the Blueprint view takes to expand a node of a 10,000-task
// blueprint on the extension's side: BlueprintTreeModel (src/blueprints.ts)
// against a stand-in that answers blueprint/read as the server does
// (blueprint/read.go) with no transport cost. The server's own share is
// blueprint.Read over the stored tree.
//
//   node scripts/build.mjs && node bench/blueprint-expand.mjs
import { createRequire } from "node:module";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const lib = require(join(dirname(fileURLToPath(import.meta.url)), "..", "out", "lib.cjs"));

function bigTree(phases = 5, epics = 10, features = 10, tasks = 20) {
  const nodes = [];
  let order = 0;
  const add = (kind, title, depth, parentId) => {
    const id = `n_${order}`;
    nodes.push({ id, parentId, kind, title, anchor: [title], start: order, end: order + 1, sectionEnd: order + 1, order: order++, depth, status: order % 3 ? "planned" : "done", hash: "h" });
    return id;
  };
  for (let p = 0; p < phases; p++) {
    const pid = add("phase", `Phase ${p}`, 0);
    for (let e = 0; e < epics; e++) {
      const eid = add("epic", `Epic ${e}`, 1, pid);
      for (let f = 0; f < features; f++) {
        const fid = add("feature", `Feature ${f}`, 2, eid);
        for (let t = 0; t < tasks; t++) add("task", `Task ${t}`, 3, fid);
      }
    }
  }
  return nodes;
}

const nodes = bigTree();
const index = new Map(nodes.map((n, i) => [n.id, i]));
const call = async (_m, p) => {
  let lo = 0, hi = nodes.length, base = 0;
  if (p.nodeId) {
    lo = index.get(p.nodeId);
    base = nodes[lo].depth;
    hi = lo + 1;
    while (hi < nodes.length && nodes[hi].depth > base) hi++;
  }
  if (p.cursor) lo = Number(p.cursor);
  const out = [];
  let next;
  for (let i = lo; i < hi; i++) {
    if (p.depth > 0 && nodes[i].depth - base > p.depth) continue;
    if (out.length === p.limit) { next = String(i); break; }
    out.push(nodes[i]);
  }
  // As on the wire: the answer is JSON.
  return JSON.parse(JSON.stringify({ blueprint: {}, nodes: out, ...(next ? { nextCursor: next } : {}) }));
};

const times = { roots: [], phase: [], epic: [], feature: [] };
for (let round = 0; round < 20; round++) {
  const m = new lib.BlueprintTreeModel(call);
  m.setBlueprint({ id: "bp", title: "Big", cwd: "/", primary: { id: "v", status: "ready" } });
  let t = performance.now();
  const roots = await m.children();
  times.roots.push(performance.now() - t);
  for (const r of roots) {
    t = performance.now();
    const epics = await m.children(r);
    times.phase.push(performance.now() - t);
    t = performance.now();
    const features = await m.children(epics[0]);
    times.epic.push(performance.now() - t);
    t = performance.now();
    await m.children(features[0]);
    times.feature.push(performance.now() - t);
  }
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`${nodes.filter((n) => n.kind === "task").length} tasks, ${nodes.length} nodes`);
for (const [k, v] of Object.entries(times)) console.log(`expand ${k.padEnd(8)} median ${med(v).toFixed(2)} ms  max ${Math.max(...v).toFixed(2)} ms  (${v.length} samples)`);
