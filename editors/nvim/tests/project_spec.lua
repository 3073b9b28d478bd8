-- The project and its manager in Neovim (apserver.project, and `s` in the
-- blueprint tree) against the real apserver and its scripted model
-- (helpers.SCRIPT). Judged by the buffers' text, the status line, and the
-- project, its decisions and its runs as apserver reads them back.
local h = require("helpers")
local methods = require("apserver.methods")

local buftext, has, keys, line_of = h.buftext, h.has, h.buf_keys, h.line_of

local function rpc(method, params)
  local res, err = require("apserver").state.client:request_sync(method, params, 10000)
  assert(not err, err and err.message)
  return res
end

-- pick stubs vim.ui.select to choose the item holding want; returns the
-- items offered (filled in when asked)
local function pick(want)
  local offered = {}
  local orig = vim.ui.select
  vim.ui.select = function(items, _, cb)
    vim.ui.select = orig
    for i, it in ipairs(items) do
      offered[i] = it
    end
    for i, it in ipairs(items) do
      if it:find(want, 1, true) then
        return cb(it, i)
      end
    end
    cb(nil, nil)
  end
  return offered
end

-- answers stubs vim.ui.input to answer the next prompts in order
local function answers(list)
  local orig = vim.ui.input
  local i = 0
  vim.ui.input = function(_, cb)
    i = i + 1
    if i >= #list then
      vim.ui.input = orig
    end
    cb(list[i])
  end
end

local ingested = h.ingested

local runs = require("apserver.runs")

describe("the manager from the blueprint tree", function()
  local ws
  before_each(function()
    ws = h.git_ws(h.setup({ blueprint_paths_file = h.tempdir("bp") .. "/paths.json" }))
    vim.cmd("silent! tabonly | silent! only")
  end)
  -- the manager of this workspace stops (its heartbeat would start runs
  -- while later tests run), then its runs end
  after_each(function()
    rpc(methods.MethodProjectSettingsUpdate, { cwd = ws, mode = "off", paused = false })
    for rid, r in pairs(runs.runs) do
      if r.status ~= "completed" and r.status ~= "cancelled" and r.status ~= "failed" then
        require("apserver").state.client:request_sync(methods.MethodRunCancel, { runId = rid }, 10000)
      end
    end
  end)

  it("s on a phase asks for the mode, sets the project's phase, ticks and shows what the manager did; the status line follows", function()
    local id, b = ingested(ws)
    local bp = require("apserver.blueprint")
    local phase = bp.trees[id].nodes[1]
    assert.are.equal("phase", phase.kind)
    -- the manager starts runs of a node's generated tasks
    vim.api.nvim_win_set_cursor(vim.fn.win_findbuf(b)[1], { line_of(b, "Print hello"), 0 })
    keys(b, "t")
    h.wait(has(b, "• Write hello.sh"), 30000, "the node's tasks")
    vim.api.nvim_win_set_cursor(vim.fn.win_findbuf(b)[1], { line_of(b, "phase  Greetings"), 0 })
    local offered = pick("in mode semi_auto")
    keys(b, "s")
    h.wait(function()
      return #offered > 0
    end, 10000, "the confirmation")
    assert.are.same({
      'the manager builds phase "Greetings" in mode semi_auto',
      'the manager builds phase "Greetings" in mode full_auto',
      'the manager builds phase "Greetings" in mode suggest',
      "cancel",
    }, offered)
    h.wait(has(b, "manager: started_run"), 30000, "what the manager did, in the tree")
    local st = rpc(methods.MethodProjectSettingsRead, { cwd = ws }).settings
    assert.are.equal("semi_auto", st.mode)
    assert.are.equal(id, st.blueprintId)
    assert.are.equal(phase.id, st.phase)
    assert.is_false(st.paused)
    -- the run the tree names is the manager's; a run's change wakes the
    -- heartbeat, so a later tick may be the last one: look among the
    -- recent ticks for the one that started it
    local run_id = buftext(b):match("manager: started_run[^\n]*%(run (%w+)%)")
    assert.truthy(run_id, buftext(b))
    local run = rpc(methods.MethodRunRead, { runId = run_id }).run
    assert.are.equal(id, run.blueprint.blueprintId)
    local status = rpc(methods.MethodProjectStatus, { cwd = ws })
    local started = false
    for _, r in ipairs(status.recent or {}) do
      started = started or (r.kind == "tick" and r.result == "started_run")
    end
    assert.is_true(started, vim.inspect(status.recent))
    -- the run waits for its plan's approval (semi_auto): the status line
    -- says the manager's mode and what waits
    h.wait(function()
      return require("apserver").statusline():find("manager semi_auto: waiting for you (1): run planApproval", 1, true)
    end, 30000, "the manager in the status line")
  end)

  it("s on a node below a phase offers a run of its tasks or the manager on its phase; cancel changes nothing", function()
    local id, b = ingested(ws)
    rpc(methods.MethodProjectSettingsUpdate, { cwd = ws, mode = "semi_auto", paused = true })
    vim.api.nvim_win_set_cursor(vim.fn.win_findbuf(b)[1], { line_of(b, "Print hello"), 0 })
    local offered = pick("cancel")
    keys(b, "s")
    h.wait(function()
      return #offered > 0
    end, 10000, "the confirmation")
    assert.are.same({
      'a run of the tasks of task "Print hello", now',
      'the manager builds phase "Greetings" (mode semi_auto, resumed)',
      "cancel",
    }, offered)
    local st = rpc(methods.MethodProjectSettingsRead, { cwd = ws }).settings
    assert.are.equal("", st.blueprintId)
    assert.is_true(st.paused)

    -- a run of the node: its buffer opens
    local before = vim.tbl_count(runs.bufs)
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(b)[1])
    pick("a run of the tasks")
    keys(b, "s")
    h.wait(function()
      return vim.tbl_count(runs.bufs) > before
    end, 20000, "the run buffer")
    local rid = vim.b.apserver_run
    local node = require("apserver.blueprint").trees[id].nodes[3]
    assert.are.equal("Print hello", node.title)
    local run = rpc(methods.MethodRunRead, { runId = rid }).run
    assert.are.equal(node.id, run.blueprint.nodeId)
    h.wait(has(b, "started run " .. rid .. ' for task "Print hello"'), 10000, "the run in the tree")
  end)
end)

describe(":ApserverProject", function()
  local ws
  before_each(function()
    ws = h.git_ws(h.setup())
    vim.cmd("silent! tabonly | silent! only")
  end)
  after_each(function()
    rpc(methods.MethodProjectSettingsUpdate, { cwd = ws, mode = "off", paused = false })
  end)

  it("shows the status and decisions; a adds a decision, d revokes it, m sets the mode, p pauses; project/updated keeps it live", function()
    vim.cmd("ApserverProject")
    local b = vim.api.nvim_get_current_buf()
    assert.are.equal("apserver-project", vim.bo[b].filetype)
    h.wait(has(b, "mode off · idle"), 15000, "the status")
    h.wait(has(b, "  (none)"), 15000, "no decisions")
    local t = buftext(b)
    assert.truthy(t:find("last tick: none", 1, true), t)
    assert.truthy(t:find("spend today: runs 0/∞ · tokens 0/∞ · cost 0.00/∞", 1, true), t)
    assert.truthy(t:find("── waits for you (0) ──", 1, true), t)

    answers({ "Use PostgreSQL", "All data in PostgreSQL.", "one database to run" })
    keys(b, "a")
    h.wait(has(b, "● Use PostgreSQL  [active]"), 10000, "the decision")
    assert.truthy(buftext(b):find("      why: one database to run", 1, true), buftext(b))
    local list = rpc(methods.MethodProjectDecisionList, { cwd = ws }).decisions
    assert.are.equal(1, #list)
    assert.are.equal("All data in PostgreSQL.", list[1].text)

    vim.api.nvim_win_set_cursor(vim.fn.win_findbuf(b)[1], { line_of(b, "why: one database"), 0 })
    answers({ "we moved to SQLite" })
    keys(b, "d")
    h.wait(function()
      return not buftext(b):find("Use PostgreSQL", 1, true)
    end, 10000, "the decision revoked")
    list = rpc(methods.MethodProjectDecisionList, { cwd = ws, all = true }).decisions
    assert.are.equal("revoked", list[1].status)

    pick("full_auto")
    keys(b, "m")
    h.wait(has(b, "mode full_auto · idle"), 10000, "the mode")
    assert.are.equal("full_auto", rpc(methods.MethodProjectSettingsRead, { cwd = ws }).settings.mode)
    keys(b, "p")
    h.wait(has(b, "mode full_auto · paused"), 10000, "paused")
    assert.is_true(rpc(methods.MethodProjectSettingsRead, { cwd = ws }).settings.paused)
    h.wait(function()
      return require("apserver").statusline():find("manager full_auto: paused", 1, true)
    end, 10000, "the status line")

    -- a change made elsewhere (another client, the headless CLI) shows
    -- through project/updated
    rpc(methods.MethodProjectSettingsUpdate, { cwd = ws, paused = false, mode = "suggest" })
    h.wait(has(b, "mode suggest · idle"), 10000, "the buffer to follow project/updated")
    -- T ticks: with no blueprint the manager has nothing to do, and says so
    keys(b, "T")
    h.wait(has(b, "last tick "), 10000, "the tick")
    local last = rpc(methods.MethodProjectStatus, { cwd = ws }).lastTick
    assert.truthy(buftext(b):find(": " .. last.result .. " — " .. last.reason, 1, true), buftext(b))
  end)
end)

describe("the manager's state", function()
  local project = require("apserver.project")
  it("is named by what matters most: paused, budget, error, waiting, running, idle", function()
    local base = { mode = "full_auto", paused = false, runs = { completed = 2 }, attention = {} }
    local function with(t)
      return vim.tbl_extend("force", base, t)
    end
    assert.are.equal("idle", project.pill(base))
    assert.are.equal("running 3", project.pill(with({ runs = { running = 1, queued = 1, pausing = 1, completed = 4, waiting = 1 } })))
    assert.are.equal("waiting for you (2)", project.pill(with({ runs = { running = 1 }, attention = { { kind = "approval", runId = "r1" }, { kind = "approval" } } })))
    assert.are.equal("error", project.pill(with({ lastTick = { result = "started_run", error = "unknown task" }, attention = { { kind = "approval" } } })))
    assert.are.equal("budget exhausted", project.pill(with({ lastTick = { result = "budget_exhausted", reason = "runsPerDay" }, attention = { { kind = "paused" } } })))
    assert.are.equal("paused", project.pill(with({ paused = true, lastTick = { result = "budget_exhausted" } })))
  end)
  it("is in the status line only while the mode is not off", function()
    local cwd = "/nowhere/project"
    project.status[cwd] = { mode = "off", attention = {} }
    assert.are.equal("", project.statusline(cwd))
    project.status[cwd] = { mode = "suggest", attention = { { kind = "approval" } } }
    assert.are.equal("manager suggest: waiting for you (1): approval", project.statusline(cwd))
    project.status[cwd] = nil
    assert.are.equal("", project.statusline(cwd))
  end)
end)
