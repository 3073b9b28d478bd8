// Diff helpers with no dependencies (the webview uses these too).

import type { PatchChangeKind as FileChangeKind } from "./protocol";

/** True if the text looks like a unified diff (has a hunk header). */
export function isUnifiedDiff(diff: string): boolean {
  return /^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/m.test(diff);
}

/** Counts added and removed lines of a change, for the panel. */
export function diffStat(diff: string, kind: FileChangeKind): { added: number; removed: number } {
  if (!isUnifiedDiff(diff)) {
    const n = diff === "" ? 0 : diff.replace(/\n$/, "").split("\n").length;
    if (kind.type === "delete") return { added: 0, removed: n };
    return { added: n, removed: 0 };
  }
  let added = 0;
  let removed = 0;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---")) continue;
    if (line.startsWith("+")) added++;
    else if (line.startsWith("-")) removed++;
  }
  return { added, removed };
}
