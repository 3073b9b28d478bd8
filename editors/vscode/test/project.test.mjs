// The project as the editor shows it (src/project.ts): the manager's pill,
// the dashboard's page and history, and approvals stopped by the alignment
// check, read from the reason session/brainhook.go writes.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { lib } from "./helpers.mjs";

const { managerPill, recordStatus, startedRun, startedRuns, newestSeq, renderDashboard, progressChart, risksOf, parseAlignmentReason, waitingForYou, runsWaitingForYou, MAX_TICKS, mcpRows } = lib;

const status = (over = {}) => ({
  cwd: "/ws",
  mode: "full_auto",
  paused: false,
  blueprintId: "bp_1",
  phase: "n_p1",
  phaseDone: false,
  lastTick: null,
  lastTickAtMs: 0,
  runs: {},
  tasks: { planned: 2, done: 1 },
  spend: { runs: 1, tokens: 0, cost: 0, budget: { runsPerDay: 4 } },
  ...over,
});

describe("the manager's pill", () => {
  test("each state: off, paused, error, waiting for you, budget exhausted, running N, idle", () => {
    assert.deepEqual(
      [
        managerPill(status({ mode: "off" })),
        managerPill(status({ paused: true })),
        managerPill(status({ lastTick: { result: "nothing_to_do", reason: "x", error: "store is locked" } })),
        managerPill(status({ runs: { waiting: 1, running: 1 } })),
        managerPill(status({ lastTick: { result: "budget_exhausted", reason: "1 of 1 runs today" } })),
        managerPill(status({ runs: { running: 2 } })),
        managerPill(status()),
        managerPill(undefined, [], "method not found"),
      ].map((p) => [p.state, p.text, p.attention]),
      [
        ["off", "$(circle-slash) Manager: Off", false],
        ["paused", "$(debug-pause) Manager Full: paused", false],
        ["error", "$(error) Manager Full: error", true],
        ["waiting", "$(bell-dot) Manager Full: waiting for you", true],
        ["budget", "$(warning) Manager Full: budget exhausted", true],
        ["running", "$(sync~spin) Manager Full: running 2", false],
        ["idle", "$(check) Manager Full: idle", false],
        ["error", "$(error) Manager: error", true],
      ],
    );
    assert.equal(managerPill(status({ mode: "semi_auto" }), [{ status: "waiting" }, { status: "waiting" }]).text, "$(bell-dot) Manager Semi: 2 waiting for you");
    // Under full_auto the manager approves the plans itself: not for you.
    const planWait = { status: "waiting", waitingFor: "planApproval" };
    assert.equal(managerPill(status({ runs: { waiting: 1 } }), [planWait]).text, "$(sync~spin) Manager Full: running 1");
    assert.equal(managerPill(status({ mode: "semi_auto", runs: { waiting: 1 } }), [planWait]).text, "$(bell-dot) Manager Semi: waiting for you");
    const tip = managerPill(status({ lastTick: { result: "started_run", reason: "task t_1 is ready", runId: "r1" } })).tooltip;
    assert.match(tip, /Full — starts runs and approves/);
    assert.match(tip, /Last tick: started_run — task t_1 is ready/);
    assert.match(tip, /Tasks: 1\/3 done/);
  });

  test("the Runs badge counts runs waiting and a suggestion waiting for a yes", () => {
    assert.equal(waitingForYou(2, status()), 2);
    const runs = [{ status: "waiting", waitingFor: "planApproval" }, { status: "waiting", waitingFor: "taskApproval" }, { status: "running" }];
    assert.equal(runsWaitingForYou(runs, status()), 1, "under full_auto the manager approves the plan");
    assert.equal(runsWaitingForYou(runs, status({ paused: true })), 2, "paused, it does not");
    assert.equal(runsWaitingForYou(runs, status({ mode: "semi_auto" })), 2);
    assert.equal(waitingForYou(0, status({ mode: "suggest", lastTick: { result: "waiting_for_approval", reason: "would start t_1", taskIds: ["t_1"] } })), 1);
    assert.equal(waitingForYou(1, status({ mode: "suggest", paused: true, lastTick: { result: "waiting_for_approval", reason: "" } })), 1);
  });

  test("a toast once per started run: a new tick that started a run, not the same tick read again", () => {
    const t = { result: "started_run", reason: "task t_1 is ready", runId: "r1", taskIds: ["t_1"] };
    assert.equal(startedRun(null, 0, status({ lastTick: t, lastTickAtMs: 10 })), "r1");
    assert.equal(startedRun(t, 10, status({ lastTick: t, lastTickAtMs: 10 })), undefined);
    assert.equal(startedRun(t, 10, status({ lastTick: { ...t, runId: "r2" }, lastTickAtMs: 20 })), "r2");
    assert.equal(startedRun(t, 10, status({ lastTick: { result: "nothing_to_do", reason: "" }, lastTickAtMs: 20 })), undefined);
  });

  test("a toast for every run started since the last read, even when a later tick is the last one", () => {
    // A run's change wakes the manager: by the time the status is read the
    // tick that started r2 is behind a nothing_to_do tick.
    const recent = [
      { kind: "tick", seq: 7, atMs: 70, result: "nothing_to_do", reason: "1 runs in progress" },
      { kind: "intent", seq: 6, atMs: 60, result: "paused" },
      { kind: "tick", seq: 5, atMs: 50, result: "started_run", reason: "task t_2 is ready", runId: "r2", taskIds: ["t_2"] },
      { kind: "tick", seq: 4, atMs: 40, result: "started_run", reason: "task t_1 is ready", runId: "r1", taskIds: ["t_1"] },
    ];
    const st = status({ lastTick: { result: "nothing_to_do", reason: "" }, lastTickAtMs: 70, recent });
    assert.deepEqual(startedRuns(st, 3).map((r) => r.runId), ["r1", "r2"]);
    assert.deepEqual(startedRuns(st, 4), [{ seq: 5, runId: "r2", reason: "task t_2 is ready" }]);
    assert.deepEqual(startedRuns(st, newestSeq(st)), []);
    assert.equal(newestSeq(status()), 0);
    // The dashboard's history takes every tick since its last one, in order.
    let h = recordStatus({ progress: [], ticks: [] }, status({ recent: recent.slice(2) }), 1);
    assert.deepEqual(h.ticks.map((t) => t.seq), [4, 5]);
    h = recordStatus(h, st, 2);
    assert.deepEqual(h.ticks.map((t) => [t.seq, t.tick.result, t.tick.runId]), [[4, "started_run", "r1"], [5, "started_run", "r2"], [7, "nothing_to_do", undefined]]);
    assert.equal(recordStatus(h, st, 3).ticks.length, 3, "the same ticks read again");
  });
});

describe("the dashboard", () => {
  test("history: a progress sample when the counts change, a tick when it is new, both bounded", () => {
    let h = { progress: [], ticks: [] };
    h = recordStatus(h, status(), 1000);
    h = recordStatus(h, status(), 2000);
    assert.deepEqual(h.progress, [[1000, 1, 3]]);
    h = recordStatus(h, status({ tasks: { planned: 1, done: 2 }, lastTick: { result: "started_run", reason: "r", runId: "r1" }, lastTickAtMs: 1500 }), 3000);
    h = recordStatus(h, status({ tasks: { planned: 1, done: 2 }, lastTick: { result: "started_run", reason: "r", runId: "r1" }, lastTickAtMs: 1500 }), 4000);
    assert.deepEqual(h.progress, [[1000, 1, 3], [3000, 2, 3]]);
    assert.deepEqual(h.ticks.map((t) => t.atMs), [1500]);
    for (let i = 0; i < MAX_TICKS + 5; i++) h = recordStatus(h, status({ lastTick: { result: "nothing_to_do", reason: String(i) }, lastTickAtMs: 2000 + i }), 5000);
    assert.equal(h.ticks.length, MAX_TICKS);
    assert.equal(h.ticks[h.ticks.length - 1].tick.reason, String(MAX_TICKS + 4));
  });

  test("the page: blueprint and phase, chart, counts, runs with links, spend against budgets, decisions, risks, ticks — all escaped", () => {
    const html = renderDashboard({
      cwd: "/ws",
      status: status({ runs: { running: 1, completed: 2 }, tasks: { planned: 1, blocked: 1, done: 2 } }),
      blueprintTitle: "Greeting <spec>",
      phaseTitle: "Phase 1: Greeting",
      decisions: [
        { id: "dec_1", title: "Use <PostgreSQL>", text: "All data", status: "active", source: "user", cwd: "/ws", scope: {}, createdAtMs: 0, updatedAtMs: 0 },
        { id: "dec_2", title: "Use Celery", text: "", status: "proposed", source: "model", cwd: "/ws", scope: {}, createdAtMs: 0, updatedAtMs: 0 },
      ],
      runs: [{ id: "r1", request: 'Build "S1" <now>', status: "running", counts: { completed: 1, total: 3 } }],
      history: { progress: [[0, 0, 3], [1000, 2, 3]], ticks: [{ atMs: Date.UTC(2026, 0, 1, 12, 0, 5), tick: { result: "started_run", reason: "task t_1 is ready", runId: "r1" } }] },
      risks: ["1 task(s) blocked"],
      explain: { phase: "n_p1", summary: "A tick would answer nothing_to_do." },
    });
    assert.match(html, /<b>Greeting &lt;spec&gt;<\/b>/);
    assert.match(html, /Phase: <b>Phase 1: Greeting<\/b>/);
    assert.match(html, /<svg class="chart"[^>]*aria-label="tasks done over time: 2 of 3"/);
    assert.match(html, /<span class="n">1<\/span> blocked/);
    assert.match(html, /<span class="n">2<\/span> completed/);
    assert.match(html, /data-action="openRun" data-id="r1">Build &quot;S1&quot; &lt;now&gt;<\/a>/);
    assert.match(html, /<td>runs<\/td><td>1 \/ 4<\/td><td><progress max="100" value="25"><\/progress> 25%/);
    assert.match(html, /<td>tokens<\/td><td>0<\/td><td class="muted">no limit/);
    assert.match(html, /<b>Use &lt;PostgreSQL&gt;<\/b>/);
    assert.match(html, /data-action="revokeDecision" data-id="dec_1"/);
    assert.match(html, /data-action="confirmDecision" data-id="dec_2"/);
    assert.ok(!/data-action="confirmDecision" data-id="dec_1"/.test(html), "an active decision has nothing to confirm");
    assert.match(html, /⚠ 1 task\(s\) blocked/);
    assert.match(html, /12:00:05<\/span> <b>started_run<\/b> — task t_1 is ready/);
    assert.match(html, /A tick would answer nothing_to_do\./);
    assert.ok(!/<[a-z]+[^>]* on[a-z]+=/i.test(html), "no inline event handler (the CSP forbids them)");
    assert.ok(!/ style=/.test(html), "no inline style (the CSP forbids them)");
  });

  test("without a blueprint it offers to ingest one; the chart says when there is nothing yet", () => {
    const html = renderDashboard({ cwd: "/ws", status: status({ blueprintId: "", mode: "off" }), decisions: [], runs: [], history: { progress: [], ticks: [] }, risks: [] });
    assert.match(html, /data-action="ingest"/);
    assert.match(progressChart([]), /No progress recorded yet/);
    assert.match(html, /No tick yet/);
  });

  test("risks and blockers: blocked tasks, failed and waiting runs, proposed decisions, a spent budget", () => {
    const r = risksOf(
      status({ tasks: { blocked: 2 }, lastTick: { result: "budget_exhausted", reason: "1 of 1 runs today" } }),
      [{ id: "dec_2", title: "Use Celery", status: "proposed" }],
      [{ status: "failed", request: "Build S2", reason: "checks failed" }, { status: "waiting", waitingFor: "taskApproval", request: "Build S3" }],
    );
    assert.deepEqual(r, [
      "2 task(s) blocked",
      "run failed: Build S2 — checks failed",
      "run waits for you (taskApproval): Build S3",
      "proposed decision to confirm or revoke: Use Celery",
      "budget exhausted: 1 of 1 runs today",
    ]);
  });
});

describe("approvals stopped by the alignment check", () => {
  test("reads the verdict, the decisions and the reasons of the reason session/brainhook.go writes", () => {
    const reason =
      'The project brain judged this conflicting against decision dec_1a2b3c4d5e6f "Use PostgreSQL": adds mysql-connector-python (mysql), against decision dec_1a2b3c4d5e6f "Use PostgreSQL", which chose postgres. Approving records a decision that supersedes it.';
    assert.deepEqual(parseAlignmentReason(reason), {
      verdict: "conflicting",
      decisions: [{ id: "dec_1a2b3c4d5e6f", title: "Use PostgreSQL" }],
      reasons: 'adds mysql-connector-python (mysql), against decision dec_1a2b3c4d5e6f "Use PostgreSQL", which chose postgres',
    });
    const two = 'The project brain judged this risky against decision dec_a "Use \\"Postgres\\": always", dec_b "No ORM": touches db/; adds sqlalchemy. Approving records a decision that supersedes it.';
    assert.deepEqual(parseAlignmentReason(two), {
      verdict: "risky",
      decisions: [
        { id: "dec_a", title: 'Use "Postgres": always' },
        { id: "dec_b", title: "No ORM" },
      ],
      reasons: "touches db/; adds sqlalchemy",
    });
    assert.equal(parseAlignmentReason("The command writes outside the workspace."), undefined);
    assert.equal(parseAlignmentReason(null), undefined);
  });
});

describe("the MCP section", () => {
  test("servers by name with status, tool count, auth and errors; tools sorted with their first line", () => {
    const tool = (name, description) => ({ name, description, inputSchema: {} });
    const rows = mcpRows(
      [
        { name: "tickets", authStatus: "bearerToken", runtimeStatus: "connected", tools: { b: tool("search", "Search tickets.\nMore."), a: tool("create", "Create one") }, resources: [], resourceTemplates: [], httpOrigin: "https://mcp.example.com", serverInfo: { name: "tix", version: "1.2" } },
        { name: "docs", authStatus: "unsupported", tools: {}, resources: [], resourceTemplates: [], toolsError: "spawn docs-mcp ENOENT" },
      ],
      { docs: { status: "failed", error: "spawn docs-mcp ENOENT" } },
    );
    assert.deepEqual(
      rows.map((r) => [r.name, r.status, r.icon, r.description]),
      [
        ["docs", "failed", "error", "failed · 0 tools"],
        ["tickets", "connected", "pass-filled", "connected · 2 tools · bearerToken"],
      ],
    );
    assert.deepEqual(rows[1].tools, [
      { name: "create", description: "Create one" },
      { name: "search", description: "Search tickets." },
    ]);
    assert.match(rows[1].tooltip, /tix 1\.2\nhttps:\/\/mcp\.example\.com/);
    assert.match(rows[0].tooltip, /error: spawn docs-mcp ENOENT/);
  });
});
