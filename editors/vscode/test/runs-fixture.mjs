// A run as apserver sends it (protocol/run.go), for the runs tests: a plan
// of three tasks waiting for approval, t3 high risk and after t1 and t2.
export const RUN_ID = "r-5f2c9a1b";

export function task(id, title, over = {}) {
  return {
    id,
    title,
    description: `Do ${title.toLowerCase()}.`,
    kind: "file_edit",
    dependencies: [],
    risk: "low",
    acceptance: { criteria: [`${title} works`], checks: ["sh greet.sh --shout bob | grep -q 'HELLO, BOB'"], files: ["greet.sh"] },
    estimate: "5m",
    status: "pending",
    retryCount: 0,
    threadId: null,
    commit: null,
    lastFailure: null,
    completedAtMs: null,
    ...over,
  };
}

export function counts(tasks) {
  const c = { total: tasks.length, pending: 0, approved: 0, running: 0, completed: 0, failed: 0, blocked: 0, skipped: 0 };
  for (const t of tasks) c[t.status]++;
  return c;
}

export function sampleRun(over = {}) {
  const tasks = [
    task("t1", "Parse a --shout flag"),
    task("t2", "Upper-case the greeting", { dependencies: ["t1"], risk: "medium" }),
    task("t3", "Rewrite the release script", { dependencies: ["t1", "t2"], risk: "high", kind: "shell_command" }),
  ];
  return {
    id: RUN_ID,
    request: "add a shout option to greet.sh",
    status: "waiting",
    stage: "planApproval",
    waitingFor: "planApproval",
    reason: "the plan waits for approval",
    cwd: "/home/me/greet",
    baseBranch: "main",
    branch: "apserver/5f2c9a1b-add-a-shout-option-to-greet-sh",
    worktree: "/home/me/.apserver/worktrees/r-5f2c9a1b",
    trust: { planning: "manual", implementation: "auto", fixes: "auto" },
    autonomy: "full_auto",
    merge: "ff",
    models: { planner: null, implementer: null, validator: null },
    maxClarifications: 3,
    clarifications: [],
    plannerThreadId: "th-planner",
    currentTaskId: null,
    counts: counts(tasks),
    plan: { version: 1, summary: "Add `--shout`, then upper-case, then release.", tasks, approved: false },
    repairProposal: null,
    mergeCommit: null,
    createdAtMs: 1764086400000,
    updatedAtMs: 1764086402000,
    ...over,
  };
}
