// Rebuilding the "before" and "after" text of a file change from its diff,
// for vscode.diff. The file on disk is one side (after, once the change was
// applied; before, while it awaits approval); the other is derived with
// applyPatch, or with the reversed patch for "before".

import { applyPatch, parsePatch, reversePatch, type StructuredPatch } from "diff";
import type { PatchChangeKind as FileChangeKind } from "./protocol";
import { isUnifiedDiff } from "./diffstat";

export { isUnifiedDiff };

export interface Sides {
  before: string;
  after: string;
  /** How the sides were obtained, for the tab title / log. */
  method: "patch" | "reverse-patch" | "content" | "hunks";
}

function parseOne(diff: string): StructuredPatch | undefined {
  try {
    const patches = parsePatch(diff);
    return patches.find((p) => p.hunks.length > 0);
  } catch {
    return undefined;
  }
}

/** Side texts made of the hunks alone (context plus removed / added lines). */
export function sidesFromHunks(diff: string): Sides {
  const before: string[] = [];
  const after: string[] = [];
  const p = parseOne(diff);
  if (p) {
    p.hunks.forEach((h, i) => {
      if (i > 0) {
        before.push("⋯");
        after.push("⋯");
      }
      for (const line of h.lines) {
        const tag = line[0];
        const text = line.slice(1);
        if (tag === " ") {
          before.push(text);
          after.push(text);
        } else if (tag === "-") before.push(text);
        else if (tag === "+") after.push(text);
      }
    });
  }
  return { before: before.join("\n") + "\n", after: after.join("\n") + "\n", method: "hunks" };
}

/**
 * Returns both sides of one file change.
 *
 * @param kind     the change's kind (add / delete / update)
 * @param diff     the change's diff: a unified diff, or for add/delete the
 *                 file's content (Codex sends content there)
 * @param onDisk   the file's current text, or undefined if it doesn't exist
 * @param applied  whether the change is already on disk (item completed)
 */
export function rebuildSides(
  kind: FileChangeKind,
  diff: string,
  onDisk: string | undefined,
  applied: boolean,
): Sides {
  const unified = isUnifiedDiff(diff);
  if (kind.type === "add" && !unified) return { before: "", after: diff, method: "content" };
  if (kind.type === "delete" && !unified) return { before: diff, after: "", method: "content" };
  if (!unified) return { before: onDisk ?? "", after: diff, method: "content" };

  const patch = parseOne(diff);
  if (!patch) return sidesFromHunks(diff);

  if (kind.type === "add") {
    const after = applyPatch("", patch);
    if (after !== false) return { before: "", after, method: "patch" };
  }
  if (kind.type === "delete") {
    const before = applyPatch("", reversePatch(patch));
    if (before !== false) return { before, after: "", method: "reverse-patch" };
  }

  const disk = onDisk ?? "";
  const forward = (): Sides | undefined => {
    const after = applyPatch(disk, patch);
    return after === false ? undefined : { before: disk, after, method: "patch" };
  };
  const backward = (): Sides | undefined => {
    const before = applyPatch(disk, reversePatch(patch));
    return before === false ? undefined : { before, after: disk, method: "reverse-patch" };
  };
  // Try the likely direction first, then the other (the file may have been
  // changed, or the change applied, since the item was reported).
  const result = applied ? (backward() ?? forward()) : (forward() ?? backward());
  return result ?? sidesFromHunks(diff);
}
