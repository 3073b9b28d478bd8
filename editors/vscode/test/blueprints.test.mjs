// The blueprint explorer's model (src/blueprints.ts) against a stand-in for
// blueprint/read that answers as the server does (blueprint/read.go: the
// subtree of nodeId in reading order, depth levels below it, pages of
// limit from cursor): a 10,000-task blueprint is read a node at a time.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { lib } from "./helpers.mjs";

const { BlueprintTreeModel, childrenOf, nodeDescription, nodeTooltip, byteToCharOffset, byteSlice, coverageMarkdown, diffMarkdown, verifySummary, activeBlueprint, READ_LIMIT, coverageWarning } = lib;

/** A tree in reading order: phases × epics × features × tasks. */
function bigTree(phases = 5, epics = 10, features = 10, tasks = 20) {
  const nodes = [];
  let order = 0;
  const add = (kind, title, depth, parentId, status = "planned") => {
    const id = `n_${order}`;
    nodes.push({ id, parentId, kind, title, anchor: [title], start: order * 10, end: order * 10 + 9, sectionEnd: order * 10 + 5, order: order++, depth, status, hash: "h" });
    return id;
  };
  for (let p = 0; p < phases; p++) {
    const pid = add("phase", `Phase ${p + 1}`, 0, undefined);
    for (let e = 0; e < epics; e++) {
      const eid = add("epic", `Epic ${p + 1}.${e + 1}`, 1, pid, p === 0 && e < 3 ? "done" : "planned");
      for (let f = 0; f < features; f++) {
        const fid = add("feature", `Feature ${p + 1}.${e + 1}.${f + 1}`, 2, eid);
        for (let t = 0; t < tasks; t++) add("task", `Task ${p + 1}.${e + 1}.${f + 1}.${t + 1}`, 3, fid, t < 5 ? "done" : "planned");
      }
    }
  }
  return nodes;
}

/** blueprint/read as the server answers it, logging each request and how many nodes it returned. */
function fakeServer(nodes) {
  const log = [];
  const call = async (method, p) => {
    assert.equal(method, "blueprint/read");
    let lo = 0,
      hi = nodes.length,
      base = 0;
    if (p.nodeId) {
      lo = nodes.findIndex((n) => n.id === p.nodeId);
      assert.ok(lo >= 0, `unknown node ${p.nodeId}`);
      base = nodes[lo].depth;
      hi = lo + 1;
      while (hi < nodes.length && nodes[hi].depth > base) hi++;
    }
    if (p.cursor) lo = Number(p.cursor);
    const limit = Math.min(p.limit || 200, 1000);
    const out = [];
    let next;
    for (let i = lo; i < hi; i++) {
      if (p.depth > 0 && nodes[i].depth - base > p.depth) continue;
      if (out.length === limit) {
        next = String(i);
        break;
      }
      out.push(nodes[i]);
    }
    log.push({ params: p, returned: out.length });
    return { blueprint: { id: "bp_1", title: "Big", cwd: "/ws", primary: { id: "bpv_1" } }, nodes: out, ...(next ? { nextCursor: next } : {}) };
  };
  return { call, log };
}

describe("blueprint explorer model", () => {
  test("a 10,000-task blueprint: the roots and each expand are one small blueprint/read, never the whole tree", async () => {
    const nodes = bigTree();
    assert.equal(nodes.filter((n) => n.kind === "task").length, 10000);
    const { call, log } = fakeServer(nodes);
    const m = new BlueprintTreeModel(call);
    m.setBlueprint({ id: "bp_1", title: "Big", cwd: "/ws", primary: { id: "bpv_1", status: "ready" } });

    const roots = await m.children();
    assert.equal(roots.length, 5);
    assert.equal(log.length, 1, "the roots: one request");
    assert.deepEqual(log[0].params, { blueprintId: "bp_1", depth: 1, limit: READ_LIMIT });
    assert.equal(log[0].returned, 5 + 50, "phases and their epics only");
    assert.equal(roots[0].done, 3, "phase 1: 3 of its 10 epics are done");
    assert.equal(roots[0].total, 10);
    assert.match(nodeDescription(roots[0]), /^phase · 3\/10$/);

    const epics = await m.children(roots[0]);
    assert.equal(log.length, 2, "expanding a phase: one request");
    assert.deepEqual(log[1].params, { blueprintId: "bp_1", nodeId: roots[0].node.id, depth: 2, limit: READ_LIMIT });
    assert.equal(log[1].returned, 1 + 10 + 100, "the phase, its epics and their features: no task");
    assert.equal(epics.length, 10);
    assert.equal(epics[0].total, 10);
    assert.equal(epics[0].hasChildren, true);

    const features = await m.children(epics[0]);
    assert.equal(log.length, 3);
    assert.equal(log[2].returned, 1 + 10 + 200, "the epic, its features and their tasks");
    assert.equal(features[0].done, 5, "5 of a feature's 20 tasks are done");
    assert.equal(features[0].total, 20);

    const tasks = await m.children(features[0]);
    assert.equal(log.length, 4);
    assert.equal(log[3].returned, 21);
    assert.equal(tasks.length, 20);
    assert.equal(tasks[0].hasChildren, false);

    // Expanding again reads nothing; the most read by any request is a few hundred nodes.
    await m.children(epics[0]);
    await m.children(roots[0]);
    assert.equal(log.length, 4, "an expanded node is not read again");
    assert.ok(Math.max(...log.map((l) => l.returned)) <= 211);
    assert.equal(log.reduce((a, l) => a + l.returned, 0), 55 + 111 + 211 + 21);
  });

  test("a node with more children than a page reads every page", async () => {
    const nodes = bigTree(1, 1, 1, 2500);
    const { call, log } = fakeServer(nodes);
    const m = new BlueprintTreeModel(call);
    m.setBlueprint({ id: "bp_1", title: "Wide", cwd: "/ws", primary: { id: "bpv_1", status: "ready" } });
    const [phase] = await m.children();
    const [epic] = await m.children(phase);
    const [feature] = await m.children(epic);
    const before = log.length;
    const tasks = await m.children(feature);
    assert.equal(tasks.length, 2500);
    assert.equal(log.length - before, 3, "2,501 nodes in pages of 1,000");
    assert.deepEqual(
      log.slice(before).map((l) => l.params.cursor),
      [undefined, String(feature.node.order + 1000), String(feature.node.order + 2000)],
    );
    assert.equal(feature.done, 5);
    assert.equal(feature.total, 2500);
  });

  test("blueprint/updated changes a loaded node and its parent's done/total; unloaded nodes are ignored", async () => {
    const nodes = bigTree(1, 1, 1, 8);
    const { call } = fakeServer(nodes);
    const m = new BlueprintTreeModel(call);
    m.setBlueprint({ id: "bp_1", title: "Small", cwd: "/ws", primary: { id: "bpv_1", status: "ready" } });
    const [phase] = await m.children();
    const [epic] = await m.children(phase);
    const [feature] = await m.children(epic);
    const tasks = await m.children(feature);
    const planned = tasks.find((t) => t.node.status === "planned");
    assert.equal(feature.done, 5);
    assert.equal(m.applyUpdate({ ...planned.node, status: "done" }).node.status, "done");
    assert.equal(feature.done, 6);
    assert.match(nodeDescription(feature), /6\/8/);
    assert.equal(m.applyUpdate({ ...planned.node, id: "n_unknown" }), undefined);
    m.applyUpdate({ ...tasks[0].node, status: "in_progress" });
    assert.equal(feature.done, 5);
    assert.match(nodeDescription(tasks[0]), /in progress/);
  });

  test("tasks made for a node show under it with their done/total", async () => {
    const nodes = bigTree(1, 1, 1, 0);
    const { call } = fakeServer(nodes);
    const m = new BlueprintTreeModel(call);
    m.setBlueprint({ id: "bp_1", title: "Small", cwd: "/ws", primary: { id: "bpv_1", status: "ready" } });
    const [phase] = await m.children();
    const [epic] = await m.children(phase);
    const [feature] = await m.children(epic);
    assert.equal(feature.hasChildren, false);
    const task = (id, status) => ({ id, nodeId: feature.node.id, title: `T ${id}`, kind: "file_edit", acceptance: { criteria: ["c"], checks: [], files: [] }, excerpt: { start: 3, end: 9 }, excerptText: "MUST x", status, order: 0 });
    const e = m.setTasks(feature.node.id, [task("t_1", "done"), task("t_2", "planned")]);
    assert.equal(e, feature);
    assert.equal(feature.hasChildren, true);
    assert.equal(feature.done, 1);
    assert.equal(feature.total, 2);
    const kids = await m.children(feature);
    assert.deepEqual(kids.map((k) => k.node.id), ["t_1", "t_2"]);
    assert.equal(kids[0].task.id, "t_1");
    assert.match(nodeTooltip(kids[1], undefined), /MUST x/);
  });

  test("childrenOf counts grandchildren per child", () => {
    const n = (id, depth, parentId, status = "planned") => ({ id, depth, parentId, status, kind: "story", title: id, anchor: [id] });
    const kids = childrenOf([n("p", 0), n("a", 1, "p"), n("a1", 2, "a", "done"), n("a2", 2, "a"), n("b", 1, "p")], "p", 0);
    assert.deepEqual(kids.map((k) => [k.node.id, k.done, k.total, k.hasChildren]), [["a", 1, 2, true], ["b", undefined, undefined, false]]);
  });

  test("the hover shows the source excerpt; byte offsets map to UTF-16 offsets", () => {
    const text = "# Phase 1: Café ☕\n\nThe tool MUST accept --shout.\n";
    const bytes = new TextEncoder().encode(text);
    const mustAt = bytes.indexOf("M".charCodeAt(0));
    assert.equal(byteToCharOffset(bytes, mustAt), text.indexOf("MUST"));
    assert.equal(byteSlice(bytes, 0, bytes.indexOf(10)), "# Phase 1: Café ☕");
    const e = { node: { id: "n_1", kind: "phase", title: "Phase 1: Café", anchor: ["Phase 1: Café"], status: "in_progress", start: 0, sectionEnd: bytes.length, priority: "high" }, hasChildren: true, done: 1, total: 4 };
    const tip = nodeTooltip(e, byteSlice(bytes, 0, bytes.length));
    assert.match(tip, /\*\*Phase 1: Café\*\* \(phase, in progress\)/);
    assert.match(tip, /The tool MUST accept --shout\./);
    assert.match(tip, /1\/4 done below/);
    assert.match(nodeTooltip(e, "x".repeat(5000)), /x{1200}…/);
  });

  test("coverage, diff and verify read as a person would", () => {
    const bytes = new TextEncoder().encode("preamble line\n# Phase\nbody\n");
    const md = coverageMarkdown("Spec", { totalBytes: 30, coveredBytes: 15, ratio: 0.5, gaps: [{ start: 0, end: 14 }], normativeTotal: 1, normativeMapped: 0, normative: [], uncovered: [{ start: 20, end: 25, text: "It MUST work." }] }, (s, e) => byteSlice(bytes, s, e));
    assert.match(md, /15 of 30 bytes in some node \(50\.0%\); 0 of 1 normative/);
    assert.match(md, /⚠ bytes 0–14: preamble line/);
    assert.match(md, /⚠ It MUST work\./);
    const d = diffMarkdown("Spec", { from: "bpv_a", to: "bpv_b", added: [{ id: "n_2", kind: "story", title: "New", anchor: [] }], removed: [], moved: [], modified: [{ id: "n_1", kind: "story", title: "Lockout", anchor: [] }], review: [{ id: "t_1", title: "Count", status: "planned" }] });
    assert.match(d, /## Added \(1\)\n\n- story \*\*New\*\* `n_2`/);
    assert.match(d, /## Modified \(1\)/);
    assert.match(d, /## Tasks to review \(1\)\n\n- Count `t_1`/);
    const cov = (over) => ({ totalBytes: 100, coveredBytes: 100, ratio: 1, gaps: [], normativeTotal: 2, normativeMapped: 2, normative: [], uncovered: [], ...over });
    assert.equal(coverageWarning(cov({})), undefined, "all covered: no warning row");
    assert.equal(coverageWarning(cov({ ratio: 0.999, gaps: [{ start: 0, end: 9 }] })), "99.9% covered · 1 gap");
    assert.equal(coverageWarning(cov({ ratio: 0.5, gaps: Array(100).fill({ start: 0, end: 1 }), nextCursor: "100", normativeMapped: 1 })), "50.0% covered · 100+ gaps · 1 normative sentence unmapped");
    assert.deepEqual(verifySummary({ data: [] }), { text: "No done task under this node to verify.", failed: 0 });
    const v = verifySummary({ data: [{ taskId: "t_1", title: "A", passed: true, reopened: false, checks: [] }, { taskId: "t_2", title: "B", passed: false, reopened: true, checks: [] }] });
    assert.deepEqual(v, { failed: 1, text: "1 of 2 done task(s) still pass; reopened: B." });
  });

  test("the active blueprint is the manager's, else the newest ready one", () => {
    const b = (id, status, createdAt) => ({ id, title: id, cwd: "/ws", primary: { id: `v_${id}`, status, createdAt } });
    const list = [b("old", "ready", 1), b("new", "ready", 5), b("failing", "failed", 9)];
    assert.equal(activeBlueprint(list).id, "new");
    assert.equal(activeBlueprint(list, "old").id, "old");
    assert.equal(activeBlueprint(list, "gone").id, "new");
    assert.equal(activeBlueprint([]), undefined);
  });
});
