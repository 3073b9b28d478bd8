// The blueprint explorer's model, without the "vscode" module (the Node
// tests drive it with a fake request function): which blueprint is active,
// and the tree loaded lazily, one blueprint/read per expanded node.
//
// Expanding a node asks for that node's subtree two levels deep
// (blueprint/read {nodeId, depth: 2}): its children, and theirs, so that
// every child shows "done/total" of what is directly under it without a
// request of its own. A 10,000-task blueprint is never read whole.

import type { Blueprint, BlueprintNode, BlueprintTask, ClientRequests } from "./protocol";

export type Call = <M extends keyof ClientRequests>(method: M, params: ClientRequests[M]["params"]) => Promise<ClientRequests[M]["result"]>;

/** A node of the explorer: a blueprint node (or a task made for one) with what is known under it. */
export interface ExplorerNode {
  node: BlueprintNode;
  /** A task made for a node (blueprint/node/tasks), not a node of the tree. */
  task?: BlueprintTask;
  /** Done and total of what is directly under it (children, else its tasks); undefined: not known yet. */
  done?: number;
  total?: number;
  /** Its children once read (undefined: not read yet). */
  children?: ExplorerNode[];
  /** Whether anything is under it (children or tasks). */
  hasChildren: boolean;
}

/** Page size of blueprint/read when expanding a node. */
export const READ_LIMIT = 1000;

const STATUS_ICON: Record<string, string> = {
  planned: "circle-large-outline",
  in_progress: "sync~spin",
  blocked: "error",
  done: "pass-filled",
};

/** The codicon of a node's status. */
export function statusIcon(status: string): string {
  return STATUS_ICON[status] ?? "circle-large-outline";
}

/** The label of a node: its title; the kind is in the description. */
export function nodeLabel(n: BlueprintNode): string {
  return n.title || n.anchor[n.anchor.length - 1] || n.id;
}

/** The description of a node: kind, done/total, status when not planned, priority. */
export function nodeDescription(e: ExplorerNode): string {
  const parts: string[] = [e.task ? "task" : e.node.kind];
  if (e.total !== undefined && e.total > 0) parts.push(`${e.done ?? 0}/${e.total}`);
  if (e.node.status !== "planned") parts.push(e.node.status.replace("_", " "));
  if (e.node.priority) parts.push(e.node.priority);
  if (e.task?.review) parts.push("review");
  return parts.join(" · ");
}

/** Children of the node at index i of a depth-ordered page, with counts from their own children. */
export function childrenOf(nodes: BlueprintNode[], parentId: string | undefined, parentDepth: number): ExplorerNode[] {
  const out: ExplorerNode[] = [];
  let cur: ExplorerNode | undefined;
  for (const n of nodes) {
    if (n.depth === parentDepth + 1 && (parentId === undefined || n.parentId === parentId)) {
      cur = { node: n, hasChildren: false };
      out.push(cur);
    } else if (cur && n.depth === parentDepth + 2 && n.parentId === cur.node.id) {
      cur.hasChildren = true;
      cur.total = (cur.total ?? 0) + 1;
      cur.done = (cur.done ?? 0) + (n.status === "done" ? 1 : 0);
    }
  }
  return out;
}

/** Counts of a list of nodes by status. */
export function countDone(list: { status: string }[]): { done: number; total: number } {
  return { done: list.filter((x) => x.status === "done").length, total: list.length };
}

/** A task made for a node, as an explorer node (a leaf). */
export function taskNode(parent: BlueprintNode, t: BlueprintTask): ExplorerNode {
  return {
    task: t,
    hasChildren: false,
    node: {
      id: t.id,
      parentId: parent.id,
      kind: "task",
      title: t.title,
      anchor: [...parent.anchor, t.title],
      start: t.excerpt.start,
      end: t.excerpt.end,
      sectionEnd: t.excerpt.end,
      order: parent.order,
      depth: parent.depth + 1,
      status: t.status,
      hash: "",
      ...(t.risk ? { risk: t.risk } : {}),
      ...(t.estimate ? { estimate: t.estimate } : {}),
      ...(t.dependsOn ? { dependsOn: t.dependsOn } : {}),
    },
  };
}

/** Picks the active blueprint: the manager's, else the newest ready one. */
export function activeBlueprint(list: Blueprint[], managerBlueprintId?: string): Blueprint | undefined {
  const byManager = managerBlueprintId ? list.find((b) => b.id === managerBlueprintId) : undefined;
  if (byManager) return byManager;
  const ready = list.filter((b) => b.primary?.status === "ready");
  const pool = ready.length ? ready : list;
  return [...pool].sort((a, b) => (b.primary?.createdAt ?? 0) - (a.primary?.createdAt ?? 0))[0];
}

/** The explorer's tree: the roots (phases) and each expanded node's children, read on demand. */
export class BlueprintTreeModel {
  blueprint: Blueprint | undefined;
  roots: ExplorerNode[] | undefined;
  /** Tasks made for nodes in this window (blueprint/node/tasks), by node id. */
  private readonly tasks = new Map<string, BlueprintTask[]>();
  private readonly byId = new Map<string, ExplorerNode>();

  constructor(private readonly call: Call) {}

  /** Chooses the blueprint (forgetting the loaded tree when it changes). */
  setBlueprint(b: Blueprint | undefined): void {
    if (b?.id !== this.blueprint?.id || b?.primary?.id !== this.blueprint?.primary?.id) {
      this.roots = undefined;
      this.byId.clear();
      this.tasks.clear();
    }
    this.blueprint = b;
  }

  /** Forgets the loaded tree (the next getChildren reads it again). */
  reset(): void {
    this.roots = undefined;
    this.byId.clear();
  }

  find(id: string): ExplorerNode | undefined {
    return this.byId.get(id);
  }

  private remember(list: ExplorerNode[]): ExplorerNode[] {
    for (const e of list) this.byId.set(e.node.id, e);
    return list;
  }

  /** Reads a subtree two levels deep, every page of it. */
  private async readAll(nodeId: string | undefined, depth: number): Promise<BlueprintNode[]> {
    const bp = this.blueprint;
    if (!bp) return [];
    const out: BlueprintNode[] = [];
    let cursor: string | undefined;
    do {
      const res = await this.call("blueprint/read", {
        blueprintId: bp.id,
        ...(nodeId ? { nodeId } : {}),
        depth,
        limit: READ_LIMIT,
        ...(cursor ? { cursor } : {}),
      });
      out.push(...res.nodes);
      cursor = res.nextCursor || undefined;
    } while (cursor);
    return out;
  }

  /** The children of a node (the phases for none), read on first use. */
  async children(parent?: ExplorerNode): Promise<ExplorerNode[]> {
    if (!this.blueprint) return [];
    if (!parent) {
      if (!this.roots) {
        // Phases (depth 0) and what is directly under them (depth 1).
        this.roots = this.remember(childrenOf(await this.readAll(undefined, 1), undefined, -1));
      }
      return this.roots;
    }
    if (parent.task) return [];
    if (!parent.children) {
      const made = this.tasks.get(parent.node.id);
      if (made) {
        parent.children = made.map((t) => taskNode(parent.node, t));
      } else {
        const page = await this.readAll(parent.node.id, 2);
        parent.children = childrenOf(page, parent.node.id, parent.node.depth);
      }
      this.remember(parent.children);
      if (parent.children.length) {
        const c = countDone(parent.children.map((x) => x.node));
        parent.done = c.done;
        parent.total = c.total;
      }
    }
    return parent.children;
  }

  /** Shows a node's tasks (blueprint/node/tasks' answer) under it. */
  setTasks(nodeId: string, tasks: BlueprintTask[]): ExplorerNode | undefined {
    this.tasks.set(nodeId, tasks);
    const e = this.byId.get(nodeId);
    if (!e) return undefined;
    // Only a node without child nodes shows its tasks as children.
    if (!e.children || e.children.every((c) => c.task) || e.children.length === 0) {
      e.children = this.remember(tasks.map((t) => taskNode(e.node, t)));
      e.hasChildren = tasks.length > 0;
      const c = countDone(tasks);
      e.done = c.done;
      e.total = c.total;
    }
    return e;
  }

  /** Applies blueprint/updated: the node's new state if it is loaded; true when something shown changed. */
  applyUpdate(node: BlueprintNode): ExplorerNode | undefined {
    const e = this.byId.get(node.id);
    if (!e) return undefined;
    e.node = e.task ? { ...e.node, status: node.status, title: node.title } : node;
    if (e.task) e.task = { ...e.task, status: node.status };
    // The parent's done/total follows.
    const parent = node.parentId ? this.byId.get(node.parentId) : undefined;
    if (parent?.children) {
      const c = countDone(parent.children.map((x) => x.node));
      parent.done = c.done;
      parent.total = c.total;
    }
    return e;
  }
}

/** The hover of a node: title, anchor, status and its own text (excerpt, at most max characters). */
export function nodeTooltip(e: ExplorerNode, excerpt: string | undefined, max = 1200): string {
  const n = e.node;
  const lines = [`**${escapeMd(nodeLabel(n))}** (${e.task ? "task" : n.kind}, ${n.status.replace("_", " ")})`];
  if (n.anchor.length > 1) lines.push(n.anchor.slice(0, -1).map(escapeMd).join(" › "));
  const meta = [n.priority && `priority ${n.priority}`, n.risk && `risk ${n.risk}`, n.estimate && `size ${n.estimate}`].filter(Boolean);
  if (meta.length) lines.push(meta.join(" · "));
  if (e.total) lines.push(`${e.done ?? 0}/${e.total} done below`);
  if (n.unresolved?.length) lines.push(`unresolved dependencies: ${n.unresolved.map(escapeMd).join("; ")}`);
  if (e.task?.acceptance?.criteria?.length) lines.push(`acceptance: ${e.task.acceptance.criteria.map(escapeMd).join("; ")}`);
  const text = excerpt ?? e.task?.excerptText;
  if (text) {
    const cut = text.length > max ? `${text.slice(0, max)}…` : text;
    lines.push("```markdown\n" + cut.replace(/```/g, "ʼʼʼ") + "\n```");
  }
  lines.push(`\`${n.id}\` · bytes ${n.start}–${n.sectionEnd}`);
  return lines.join("\n\n");
}

function escapeMd(s: string): string {
  return s.replace(/([\\`*_{}[\]<>()#+!|])/g, "\\$1");
}

/** The UTF-16 offset in text of byte offset b of its UTF-8 encoding. */
export function byteToCharOffset(bytes: Uint8Array, b: number): number {
  return new TextDecoder().decode(bytes.subarray(0, Math.max(0, Math.min(b, bytes.length)))).length;
}

/** The text of bytes [start, end) of a UTF-8 document. */
export function byteSlice(bytes: Uint8Array, start: number, end: number): string {
  return new TextDecoder().decode(bytes.subarray(Math.max(0, start), Math.max(start, Math.min(end, bytes.length))));
}

/** A coverage report as Markdown (Show Coverage). */
export function coverageMarkdown(
  title: string,
  c: ClientRequests["blueprint/coverage"]["result"],
  excerpt?: (start: number, end: number) => string | undefined,
): string {
  const pct = (c.ratio * 100).toFixed(1);
  const out = [
    `# Coverage of ${title}`,
    "",
    `${c.coveredBytes} of ${c.totalBytes} bytes in some node (${pct}%); ${c.normativeMapped} of ${c.normativeTotal} normative sentences mapped.`,
    "",
  ];
  out.push(`## Gaps (${c.gaps.length})`, "");
  if (!c.gaps.length) out.push("None.");
  for (const g of c.gaps) {
    const t = excerpt?.(g.start, g.end)?.trim().split("\n")[0];
    out.push(`- ⚠ bytes ${g.start}–${g.end}${t ? `: ${t.slice(0, 120)}` : ""}`);
  }
  out.push("", `## Uncovered normative sentences (${c.uncovered.length})`, "");
  if (!c.uncovered.length) out.push("None.");
  for (const u of c.uncovered) out.push(`- ⚠ ${u.text} (bytes ${u.start}–${u.end})`);
  return out.join("\n") + "\n";
}

/** The tree's warning line for a coverage with gaps or unmapped normative sentences; undefined when all is covered. */
export function coverageWarning(c: ClientRequests["blueprint/coverage"]["result"]): string | undefined {
  const unmapped = c.normativeTotal - c.normativeMapped;
  if (!c.gaps.length && unmapped <= 0) return undefined;
  const parts = [`${(c.ratio * 100).toFixed(1)}% covered`];
  if (c.gaps.length) parts.push(`${c.gaps.length}${c.nextCursor ? "+" : ""} gap${c.gaps.length === 1 ? "" : "s"}`);
  if (unmapped > 0) parts.push(`${unmapped} normative sentence${unmapped === 1 ? "" : "s"} unmapped`);
  return parts.join(" · ");
}

/** A diff between two versions as Markdown (Diff Against Previous Version). */
export function diffMarkdown(title: string, d: ClientRequests["blueprint/diff"]["result"]): string {
  const out = [`# ${title}: ${d.from} → ${d.to}`, ""];
  const section = (name: string, list: { id: string; kind: string; title: string }[]) => {
    out.push(`## ${name} (${list.length})`, "");
    if (!list.length) out.push("None.");
    for (const x of list) out.push(`- ${x.kind} **${x.title}** \`${x.id}\``);
    out.push("");
  };
  section("Added", d.added);
  section("Removed", d.removed);
  section("Modified", d.modified);
  section("Moved", d.moved);
  out.push(`## Tasks to review (${d.review.length})`, "");
  if (!d.review.length) out.push("None.");
  for (const t of d.review) out.push(`- ${t.title} \`${t.id}\` (${t.status})`);
  return out.join("\n") + "\n";
}

/** The result of blueprint/verify as one line per task. */
export function verifySummary(v: ClientRequests["blueprint/verify"]["result"]): { text: string; failed: number } {
  const failed = v.data.filter((t) => !t.passed).length;
  if (!v.data.length) return { text: "No done task under this node to verify.", failed: 0 };
  const reopened = v.data.filter((t) => t.reopened).map((t) => t.title);
  return {
    failed,
    text:
      `${v.data.length - failed} of ${v.data.length} done task(s) still pass` +
      (reopened.length ? `; reopened: ${reopened.join(", ")}` : "") +
      ".",
  };
}
