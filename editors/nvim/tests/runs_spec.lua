-- Runs and blueprints in Neovim (apserver.runs, apserver.blueprint) against
-- the real apserver and its scripted model (helpers.SCRIPT). Judged by the
-- buffers' text, the run as apserver reads it back, and the files the
-- run's tasks wrote on its branch.
local h = require("helpers")
local methods = require("apserver.methods")

local buftext, has, keys, line_of = h.buftext, h.has, h.buf_keys, h.line_of

-- read asks apserver for the run as it stands
local function read(id)
  local res, err = require("apserver").state.client:request_sync(methods.MethodRunRead, { runId = id }, 10000)
  assert(not err, err and err.message)
  return res.run
end

local runs = require("apserver.runs")

-- start runs :ApserverRun with a request; returns the run id and buffer
local function start(request)
  local before = vim.tbl_count(runs.bufs)
  vim.cmd("ApserverRun " .. request)
  h.wait(function()
    return vim.tbl_count(runs.bufs) > before
  end, 20000, "the run buffer")
  local id = vim.b.apserver_run
  assert.truthy(id, "the run buffer is current")
  return id, runs.bufs[id]
end

describe("runs", function()
  local ws
  before_each(function()
    ws = h.git_ws(h.setup())
    vim.cmd("silent! tabonly | silent! only")
  end)
  -- a run waiting on a human keeps its slot of max_parallel_runs: end them
  after_each(function()
    local c = require("apserver").state.client
    for rid, r in pairs(runs.runs) do
      if r.status ~= "completed" and r.status ~= "cancelled" and r.status ~= "failed" then
        c:request_sync(methods.MethodRunCancel, { runId = rid }, 10000)
      end
    end
  end)

  it(":ApserverRun shows the plan; e edits it as YAML and :w sends it; a approves; the tasks complete", function()
    local id, b = start("write two files")
    h.wait(has(b, "waiting for plan approval"), 30000, "the plan to wait")
    local t = buftext(b)
    assert.truthy(t:find("○ n1  N1-task write one.txt  [risk low]  pending", 1, true), t)
    assert.truthy(t:find("○ n2  N2-task write two.txt  [risk medium]  after n1  pending", 1, true), t)
    assert.truthy(t:find("── plan v1 · not approved ──", 1, true), t)
    -- the status line names what waits
    h.wait(function()
      return require("apserver").statusline():find("⚑1 run planApproval", 1, true)
    end, 10000, "the status line's attention")

    keys(b, "e")
    local pb = vim.api.nvim_get_current_buf()
    assert.are.equal("yaml", vim.bo[pb].filetype)
    assert.truthy(buftext(pb):find("title: N2-task write two.txt", 1, true), buftext(pb))
    local row = line_of(pb, "title: N2-task write two.txt")
    vim.api.nvim_buf_set_lines(pb, row - 1, row, false, { "    title: N2-task write two.txt, edited" })
    vim.cmd("write")
    h.wait(function()
      return not vim.bo[pb].modified
    end, 10000, "apserver to take the plan")
    local run = read(id)
    assert.are.equal(2, run.plan.version)
    assert.are.equal("N2-task write two.txt, edited", run.plan.tasks[2].title)
    assert.are.same({ "n1" }, run.plan.tasks[2].dependencies)
    assert.are.same({ "two.txt" }, run.plan.tasks[2].acceptance.files)
    h.wait(has(b, "N2-task write two.txt, edited"), 5000, "the edit in the run buffer")
    vim.cmd("close")

    keys(b, "a")
    h.wait(has(b, "Run " .. id:sub(1, 12) .. " · completed"), 90000, "the run to complete")
    t = buftext(b)
    assert.truthy(t:find("✓ n1", 1, true), t)
    assert.truthy(t:find("✓ n2", 1, true), t)
    assert.truthy(t:find("tasks: 2/2 completed", 1, true), t)
    run = read(id)
    assert.are.equal("completed", run.status)
    local two = vim.fn.system({ "git", "-C", ws, "show", run.branch .. ":two.txt" })
    assert.are.equal("two\n", two)
  end)

  it("a plan that does not parse is not sent, and the buffer says where", function()
    local id, b = start("write two files again")
    h.wait(has(b, "waiting for plan approval"), 30000, "the plan")
    keys(b, "e")
    local pb = vim.api.nvim_get_current_buf()
    local said
    local orig = vim.notify
    vim.notify = function(m)
      said = m
    end
    vim.api.nvim_buf_set_lines(pb, -1, -1, false, { "    colour: blue" })
    vim.cmd("write")
    vim.notify = orig
    assert.truthy(said and said:find("unknown field 'colour'", 1, true), said)
    assert.is_true(vim.bo[pb].modified)
    -- a dependency on a task that is not there: apserver says which
    vim.api.nvim_buf_set_lines(pb, -2, -1, false, {})
    local row = line_of(pb, "dependencies: [n1]")
    vim.api.nvim_buf_set_lines(pb, row - 1, row, false, { "    dependencies: [n9]" })
    vim.notify = function(m)
      said = m
    end
    vim.cmd("write")
    h.wait(function()
      return said and said:find("unknown task", 1, true)
    end, 10000, "apserver's answer")
    vim.notify = orig
    assert.truthy(said:find('depends on unknown task "n9"', 1, true), said)
    assert.is_true(vim.bo[pb].modified)
    assert.are.equal(1, read(id).plan.version)
    vim.cmd("bwipe!")
  end)

  it("r sends the plan back with feedback; p pauses, R resumes, X cancels", function()
    local id, b = start("write the files")
    h.wait(has(b, "waiting for plan approval"), 30000, "the plan")
    local orig = vim.ui.input
    vim.ui.input = function(_, cb)
      cb("one task only")
    end
    keys(b, "r")
    vim.ui.input = orig
    h.wait(has(b, "── plan v2"), 30000, "the new plan")
    h.wait(has(b, "waiting for plan approval"), 30000, "the new plan to wait")
    assert.falsy(buftext(b):find("n2", 1, true), buftext(b))
    keys(b, "p")
    h.wait(has(b, "· paused"), 10000, "paused")
    keys(b, "R")
    h.wait(has(b, "waiting for plan approval"), 10000, "resumed")
    local osel = vim.ui.select
    vim.ui.select = function(items, _, cb)
      cb(items[2])
    end
    keys(b, "X")
    vim.ui.select = osel
    h.wait(has(b, "· cancelled"), 10000, "cancelled")
    assert.are.equal("cancelled", read(id).status)
  end)

  it("c answers the planner's question with one of its options", function()
    local id, b = start("ask first about colours")
    h.wait(has(b, "? Which colour?"), 30000, "the question")
    assert.truthy(buftext(b):find("options: red | blue", 1, true), buftext(b))
    local offered
    local orig = vim.ui.select
    vim.ui.select = function(items, _, cb)
      offered = items
      cb("blue", 2)
    end
    keys(b, "c")
    vim.ui.select = orig
    assert.are.same({ "red", "blue", "other…" }, offered)
    h.wait(has(b, "blue it is"), 30000, "the plan made with the answer")
    local run = read(id)
    assert.are.equal("blue", run.clarifications[1].answer)
    assert.falsy(buftext(b):find("? Which colour?", 1, true))
  end)

  it("a approves the high-risk gate; s on no gate says so", function()
    local id, b = start("gate the risky write")
    h.wait(has(b, "waiting for plan approval"), 30000, "the plan")
    keys(b, "a")
    h.wait(has(b, "waiting for the high-risk gate"), 30000, "the gate")
    assert.truthy(buftext(b):find("g1  G1-task write gate.txt  [risk high]", 1, true), buftext(b))
    keys(b, "a")
    h.wait(has(b, "· completed"), 90000, "the run to complete")
    assert.are.equal(1, read(id).counts.completed)
    local said
    local orig = vim.notify
    vim.notify = function(m)
      said = m
    end
    keys(b, "s")
    vim.notify = orig
    assert.truthy(said:find("no task waits at the high-risk gate", 1, true), said)
  end)

  it("a approves the repair proposal of a blocked task; <CR> opens a task's thread; s skips at the gate; gr and q", function()
    local id, b = start("repair the flag")
    h.wait(has(b, "waiting for plan approval"), 30000, "the plan")
    keys(b, "a")
    h.wait(has(b, "waiting for a repair approval"), 120000, "the blocked task")
    h.wait(has(b, "── repair proposal"), 10000, "the repair proposal")
    local t = buftext(b)
    assert.truthy(t:find("── repair proposal for f1 (a approves) ──", 1, true), t)
    assert.truthy(t:find("fix task: f1-fix  Fix: F1-task write flag.txt", 1, true), t)
    assert.truthy(t:find("⊘ f1  F1-task write flag.txt", 1, true), t)
    -- <CR> on the task opens the chat of its (last) thread
    vim.api.nvim_win_set_cursor(vim.fn.win_findbuf(b)[1], { line_of(b, "⊘ f1"), 0 })
    local app = require("apserver")
    keys(b, "<CR>")
    local tid = read(id).plan.tasks[1].threadId
    h.wait(function()
      return app.state.chats[tid]
    end, 15000, "the task's chat")
    vim.cmd("silent! only")
    runs.open(id)
    keys(b, "a")
    h.wait(has(b, "· completed"), 120000, "the run to complete")
    local run = read(id)
    assert.are.equal("f1-fix", run.plan.tasks[1].id)
    assert.are.equal("completed", run.plan.tasks[2].status)
    -- gr reads the run again: a change made behind the buffer's back shows
    runs.runs[id].request = "stale"
    runs.draw(id)
    assert.truthy(has(b, "request: stale")())
    keys(b, "gr")
    h.wait(has(b, "request: repair the flag"), 10000, "the run read again")
    keys(b, "q")
    assert.are.equal(0, #vim.fn.win_findbuf(b))

    -- s skips the task at the high-risk gate: it never runs
    local gid, gb = start("gate it and skip")
    h.wait(has(gb, "waiting for plan approval"), 30000, "the plan")
    keys(gb, "a")
    h.wait(has(gb, "waiting for the high-risk gate"), 30000, "the gate")
    keys(gb, "s")
    h.wait(has(gb, "– g1"), 30000, "the skipped task")
    local g = read(gid)
    assert.are.equal("skipped", g.plan.tasks[1].status)
    assert.are.equal(0, vim.fn.filereadable(g.worktree .. "/gate.txt"))
  end)

  it(":ApserverRun on a visual selection sends the selected text; :ApserverRuns lists runs and <CR> opens one", function()
    vim.cmd("enew")
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { "intro", "write two files", "from the selection", "outro" })
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
    local before = vim.tbl_count(runs.bufs)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("Vj:ApserverRun<CR>", true, false, true), "x", false)
    h.wait(function()
      return vim.tbl_count(runs.bufs) > before
    end, 20000, "the run buffer")
    local id = vim.b.apserver_run
    h.wait(function()
      return runs.runs[id] and runs.runs[id].request
    end, 10000, "the run")
    assert.are.equal("write two files\nfrom the selection", read(id).request)
    vim.cmd("silent! only")
    vim.cmd("ApserverRuns")
    local lb = vim.api.nvim_get_current_buf()
    h.wait(has(lb, id:sub(1, 12)), 10000, "the run in the list")
    vim.api.nvim_win_set_cursor(0, { line_of(lb, id:sub(1, 12)), 0 })
    vim.cmd("silent! only")
    keys(lb, "<CR>")
    assert.are.equal(id, vim.b.apserver_run)
    -- the list follows run/updated
    h.wait(has(lb, "waiting:planApproval"), 30000, "the list to follow the run")
  end)
end)

describe("blueprints", function()
  before_each(function()
    h.setup({ blueprint_paths_file = h.tempdir("bp") .. "/paths.json" })
    vim.cmd("silent! tabonly | silent! only")
  end)

  it(":ApserverIngest shows progress in the status line, :ApserverBlueprint the tree; <CR> goes to the source, t makes tasks", function()
    local ws = require("apserver.config").options.cwd
    vim.fn.writefile(h.SPEC, ws .. "/spec.md")
    local bp = require("apserver.blueprint")
    local seen = {}
    local app = require("apserver")
    app.on_notification_hook = function(m)
      if m == methods.NotifyBlueprintProgress then
        table.insert(seen, app.statusline())
      end
    end
    -- this ingestion: not one an earlier test made
    local before = vim.deepcopy(bp.ingests)
    vim.cmd("ApserverIngest " .. ws .. "/spec.md")
    h.wait(function()
      for id, g in pairs(bp.ingests) do
        if not before[id] and g.status == "ready" then
          return true
        end
      end
    end, 30000, "the ingestion")
    app.on_notification_hook = nil
    -- while it ran, the status line showed the chunks done; once ready, nothing
    local function shown(part)
      for _, l in ipairs(seen) do
        if l:find(part, 1, true) then
          return true
        end
      end
      return false
    end
    assert.is_true(shown("ingest 0/1"), vim.inspect(seen))
    assert.is_true(shown("ingest 1/1"), vim.inspect(seen))
    assert.falsy(seen[#seen]:find("ingest", 1, true), vim.inspect(seen))
    assert.falsy(app.statusline():find("ingest", 1, true))

    vim.cmd("ApserverBlueprint")
    local b
    h.wait(function()
      b = vim.api.nvim_get_current_buf()
      return buftext(b):find("Print bye", 1, true)
    end, 15000, "the tree")
    local t = buftext(b)
    assert.truthy(t:find("○ phase  Greetings  0/2", 1, true), t)
    assert.truthy(t:find("  ○ epic  Say hello  0/2", 1, true), t)
    assert.truthy(t:find("    ○ task  Print hello  0/1  !high", 1, true), t)
    assert.are.equal("indent", vim.wo.foldmethod)
    assert.truthy(vim.fn.foldlevel(line_of(b, "Print bye")) >= 2)

    vim.api.nvim_win_set_cursor(0, { line_of(b, "Print hello"), 0 })
    keys(b, "t")
    h.wait(has(b, "• Write hello.sh  [planned] file_create risk low"), 30000, "the node's tasks")

    vim.api.nvim_set_current_win(vim.fn.win_findbuf(b)[1])
    vim.api.nvim_win_set_cursor(0, { line_of(b, "Print bye"), 0 })
    keys(b, "<CR>")
    assert.are.equal(ws .. "/spec.md", vim.api.nvim_buf_get_name(0))
    assert.are.equal("### Task: Print bye", vim.api.nvim_get_current_line())
  end)

  it("the tree follows blueprint/updated: a task marked done counts under its parents", function()
    local bp = require("apserver.blueprint")
    local id, b = h.ingested(require("apserver.config").options.cwd)
    local node = bp.trees[id].nodes[3]
    assert.are.equal("Print hello", node.title)
    local _, err = require("apserver").state.client:request_sync(methods.MethodBlueprintNodeUpdate, { blueprintId = id, nodeId = node.id, status = "done" }, 10000)
    assert.falsy(err)
    h.wait(has(b, "◐ phase  Greetings  1/2"), 10000, "the phase's progress")
    assert.truthy(buftext(b):find("    ● task  Print hello  1/1", 1, true), buftext(b))
  end)
end)

describe("plan YAML", function()
  local yaml = require("apserver.plan_yaml")
  it("reads back what it writes, whatever the strings hold", function()
    local tricky = { "yes", "- dash", "a: b", "x #y", "", "  lead", "trail ", '"q"', "it's", "12", "[a]", "{b}", "tab\there", "ü → ✓", "line\nbreak" }
    local tasks = {}
    for i, s in ipairs(tricky) do
      table.insert(tasks, { id = "t" .. i, title = s, kind = "file_edit", risk = "low", estimate = s, dependencies = i > 1 and { "t" .. (i - 1) } or {},
        description = s, acceptance = { criteria = { s, "c" }, checks = { s }, files = {} } })
    end
    local back, err = yaml.decode(yaml.encode(tasks, { "a comment" }))
    assert.falsy(err)
    assert.are.equal(#tasks, #back)
    for i, t in ipairs(tasks) do
      local b = back[i]
      assert.are.equal(t.title, b.title, "title " .. i)
      assert.are.equal(t.description:gsub("\n$", ""), b.description or "", "description " .. i)
      assert.are.same(t.dependencies, b.dependencies)
      assert.are.same(t.acceptance.criteria, b.acceptance.criteria)
      assert.are.same(t.acceptance.checks, b.acceptance.checks)
    end
  end)
  it("names the line it cannot read", function()
    local _, err = yaml.decode({ "tasks:", "  - id: a", "    title: x", "    dependencies: a, b" })
    assert.are.equal("line 4: a list must be [a, b] or one '- item' per line: a, b", err)
    _, err = yaml.decode({ "plan:" })
    assert.are.equal("line 1: expected 'tasks:', got: plan:", err)
  end)
end)
