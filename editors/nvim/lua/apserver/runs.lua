-- apserver.runs: runs (docs/runs.md) in Neovim. :ApserverRun starts one
-- (from its argument or a visual selection) and opens its buffer: status,
-- stage, the plan's tasks with risk, dependencies and status, the pending
-- clarification and repair proposal, with keys to answer them. The plan is
-- edited as YAML in a buffer of its own and sent back with :w. :ApserverRuns
-- lists the runs. run/* notifications keep every open buffer live.
local config = require("apserver.config")
local methods = require("apserver.methods")
local client_mod = require("apserver.client")
local yaml = require("apserver.plan_yaml")
local buffers = require("apserver.buffers")
local nn = client_mod.nn

local M = {}

-- M.runs: the runs seen, by id; M.bufs: run buffers by run id; M.list_buf
-- the :ApserverRuns buffer. Owned by the main loop.
M.runs = {}
M.bufs = {}
M.list_buf = nil
M.order = {}

local function app()
  return require("apserver")
end

local notify, with_client = buffers.notify, buffers.with_client

-- call sends a request and hands the result to cb; an error is shown. A
-- run in the result is stored.
local function call(method, params, cb)
  buffers.call(method, params, cb, function(res)
    if res and type(res.run) == "table" then
      M.put(res.run)
    end
  end)
end

-- rendering -------------------------------------------------------------

local ICON = { pending = "○", approved = "◇", running = "▶", completed = "✓", failed = "✗", blocked = "⊘", skipped = "–" }
local WAIT = {
  planApproval = "plan approval",
  taskApproval = "the high-risk gate",
  clarification = "an answer",
  repair = "a repair approval",
  resume = "resume",
  taskThread = "the task's thread",
}

local function s(v)
  v = nn(v)
  if v == nil then
    return ""
  end
  return tostring(v)
end

-- M.pending_clarification is the run's unanswered question, if any.
function M.pending_clarification(run)
  local list = nn(run.clarifications) or {}
  for i = #list, 1, -1 do
    if nn(list[i].answer) == nil then
      return list[i]
    end
  end
end

-- M.render returns the run buffer's lines and, by line number, the task
-- shown there.
function M.render(run)
  local lines, at = {}, {}
  local function add(l, task)
    table.insert(lines, l)
    if task then
      at[#lines] = task
    end
  end
  local status = s(run.status)
  local wf = s(run.waitingFor)
  local head = ("Run %s · %s"):format(s(run.id):sub(1, 12), status)
  if wf ~= "" then
    head = head .. " — waiting for " .. (WAIT[wf] or wf)
  end
  add(head .. " · stage " .. s(run.stage))
  add("request: " .. s(run.request):gsub("\n", " ⏎ "):sub(1, 200))
  if s(run.branch) ~= "" then
    add(("branch: %s (base %s)"):format(s(run.branch), s(run.baseBranch)))
  end
  local c = nn(run.counts) or {}
  add(("tasks: %d/%d completed%s%s"):format(c.completed or 0, c.total or 0,
    (c.failed or 0) > 0 and (", " .. c.failed .. " failed") or "",
    (c.blocked or 0) > 0 and (", " .. c.blocked .. " blocked") or ""))
  if s(run.reason) ~= "" then
    add("reason: " .. s(run.reason):gsub("\n", " "))
  end
  if nn(run.queuePosition) then
    add("queued: place " .. s(run.queuePosition))
  end
  local plan = nn(run.plan) or {}
  local tasks = nn(plan.tasks) or {}
  add("")
  add(("── plan v%s · %s ──"):format(s(plan.version) ~= "" and s(plan.version) or "0", plan.approved == true and "approved" or "not approved"))
  if s(plan.summary) ~= "" then
    for _, l in ipairs(vim.split(s(plan.summary), "\n", { plain = true })) do
      add(l)
    end
  end
  if #tasks == 0 then
    add("  (no plan yet)")
  end
  local cur = s(run.currentTaskId)
  for _, t in ipairs(tasks) do
    local deps = nn(t.dependencies) or {}
    local l = ("  %s %s  %s  [risk %s]"):format(ICON[s(t.status)] or "?", s(t.id), s(t.title), s(t.risk))
    if #deps > 0 then
      l = l .. "  after " .. table.concat(deps, ",")
    end
    l = l .. "  " .. s(t.status)
    if (t.retryCount or 0) > 0 then
      l = l .. " (retry " .. t.retryCount .. ")"
    end
    if s(t.id) == cur then
      l = l .. "  ◀"
    end
    add(l, t)
    if s(t.lastFailure) ~= "" and s(t.status) ~= "completed" then
      add("      ✗ " .. s(t.lastFailure):gsub("\n", " "):sub(1, 200), t)
    end
  end
  local q = M.pending_clarification(run)
  if q then
    add("")
    add("── clarification (c answers) ──")
    add("? " .. s(q.question):gsub("\n", " "))
    if s(q.context) ~= "" then
      add("  " .. s(q.context):gsub("\n", " "))
    end
    local opts = nn(q.options) or {}
    if #opts > 0 then
      add("  options: " .. table.concat(opts, " | "))
    end
  end
  local rp = nn(run.repairProposal)
  if rp then
    add("")
    add("── repair proposal for " .. s(rp.taskId) .. " (a approves) ──")
    add("failure: " .. s(rp.failure):gsub("\n", " "):sub(1, 300))
    local pt = nn(rp.proposedTask) or {}
    add("fix task: " .. s(pt.id) .. "  " .. s(pt.title))
  end
  add("")
  add("keys: a approve  e edit plan  r reject  s skip task  c answer  p pause  R resume  X cancel  <CR> task thread  gr refresh  q close")
  return lines, at
end

-- buffers ---------------------------------------------------------------

local set_lines = buffers.set_lines

-- M.draw redraws run id's buffer now.
function M.draw(id)
  local b = M.bufs[id]
  local run = M.runs[id]
  if not (b and vim.api.nvim_buf_is_valid(b) and run) then
    return
  end
  local lines, at = M.render(run)
  vim.b[b].apserver_tasks_at = nil
  M.task_at = M.task_at or {}
  M.task_at[b] = at
  set_lines(b, lines)
end

local schedule = buffers.schedule

local function changed(id)
  if M.bufs[id] then
    schedule("run:" .. id, function()
      M.draw(id)
    end)
  end
  if M.list_buf then
    schedule("runs:list", M.draw_list)
  end
end

-- M.put stores a full run (run/read, run/start, run/started, run/completed).
function M.put(run)
  if type(run) ~= "table" or not run.id then
    return
  end
  if not M.runs[run.id] then
    table.insert(M.order, 1, run.id)
  end
  M.runs[run.id] = run
  changed(run.id)
end

local function buf_run(b)
  local ok, id = pcall(vim.api.nvim_buf_get_var, b or 0, "apserver_run")
  if ok then
    return id, M.runs[id]
  end
end

local map = buffers.map

-- M.open shows run id in its buffer (reading it when needed).
function M.open(id, opts)
  opts = opts or {}
  local b = M.bufs[id]
  if not (b and vim.api.nvim_buf_is_valid(b)) then
    b = buffers.scratch("apserver://run/" .. id, "apserver-run", { apserver_run = id }, {
      { "a", M.approve, "approve the plan, the gated task or the repair" },
      { "s", M.skip, "skip the task at the high-risk gate" },
      { "e", M.edit, "edit the plan as YAML (:w sends it)" },
      { "r", M.reject, "reject the plan with feedback" },
      { "c", M.answer, "answer the clarification" },
      { "p", function() M.simple(methods.MethodRunPause) end, "pause the run" },
      { "R", function() M.simple(methods.MethodRunResume) end, "resume the run" },
      { "X", M.cancel, "cancel the run" },
      { "<CR>", M.task_thread, "open the task's thread" },
      { "gr", function() M.refresh(id) end, "read the run again" },
    })
    M.bufs[id] = b
  end
  if not opts.no_window then
    buffers.show(b, "botright vsplit")
  end
  if M.runs[id] then
    M.draw(id)
  else
    set_lines(b, { "Run " .. id .. " · loading…" })
  end
  M.refresh(id)
  return b
end

function M.refresh(id, cb)
  call(methods.MethodRunRead, { runId = id }, function(res)
    if res then
      M.draw(id)
    end
    if cb then
      cb(res)
    end
  end)
end

-- M.start starts a run toward request in the configured workspace and
-- opens its buffer; cb(run) once started.
function M.start(request, cb)
  if not request or vim.trim(request) == "" then
    notify(":ApserverRun needs a request (or a visual selection)", vim.log.levels.WARN)
    return
  end
  local o = config.options
  local params = { cwd = o.cwd or (vim.uv or vim.loop).cwd(), request = request }
  local r = o.runs or {}
  if r.base_branch then
    params.baseBranch = r.base_branch
  end
  if r.autonomy then
    params.autonomy = r.autonomy
  end
  if r.trust then
    params.trust = r.trust
  end
  call(methods.MethodRunStart, params, function(res)
    if not res then
      return
    end
    M.open(res.run.id)
    if cb then
      cb(res.run)
    end
  end)
end

-- M.command is :ApserverRun: the argument, the selected lines (a range), or both.
function M.command(o)
  local text = o.args or ""
  if o.range and o.range > 0 then
    local lines = vim.api.nvim_buf_get_lines(0, o.line1 - 1, o.line2, false)
    -- a characterwise selection on these lines: only the selected text
    local vs, ve = vim.fn.getpos("'<"), vim.fn.getpos("'>")
    if vim.fn.visualmode() == "v" and vs[2] == o.line1 and ve[2] == o.line2 and #lines > 0 then
      lines[#lines] = lines[#lines]:sub(1, ve[3])
      lines[1] = lines[1]:sub(vs[3])
    end
    local sel = table.concat(lines, "\n")
    local name = vim.fn.expand("%:.")
    if text ~= "" then
      text = text .. "\n\n" .. (name ~= "" and ("From " .. name .. ":\n") or "") .. sel
    else
      text = sel
    end
  end
  M.start(text)
end

-- actions on the run of the current buffer --------------------------------

local function current()
  local id, run = buf_run(0)
  if not id then
    notify("not a run buffer", vim.log.levels.WARN)
    return
  end
  return id, run or {}
end

function M.simple(method)
  local id = current()
  if id then
    call(method, { runId = id })
  end
end

-- M.approve approves what the run waits for: the plan, the task at the
-- high-risk gate, or the repair proposal.
function M.approve()
  local id, run = current()
  if not id then
    return
  end
  local wf = s(run.waitingFor)
  if wf == "planApproval" then
    call(methods.MethodRunPlanApprove, { runId = id })
  elseif wf == "taskApproval" then
    call(methods.MethodRunTaskApprove, { runId = id, taskId = s(run.currentTaskId), decision = "approve" })
  elseif wf == "repair" then
    local rp = nn(run.repairProposal) or {}
    call(methods.MethodRunRepairApprove, { runId = id, taskId = s(rp.taskId) })
  else
    notify("the run waits for nothing to approve (" .. (wf ~= "" and wf or s(run.status)) .. ")", vim.log.levels.WARN)
  end
end

function M.skip()
  local id, run = current()
  if not id then
    return
  end
  if s(run.waitingFor) ~= "taskApproval" then
    notify("no task waits at the high-risk gate", vim.log.levels.WARN)
    return
  end
  call(methods.MethodRunTaskApprove, { runId = id, taskId = s(run.currentTaskId), decision = "skip" })
end

function M.reject()
  local id = current()
  if not id then
    return
  end
  vim.ui.input({ prompt = "apserver: what should the planner change? " }, function(fb)
    if fb and vim.trim(fb) ~= "" then
      call(methods.MethodRunPlanReject, { runId = id, feedback = fb })
    end
  end)
end

function M.answer()
  local id, run = current()
  if not id then
    return
  end
  local q = M.pending_clarification(run)
  if not q then
    notify("no question waits for an answer", vim.log.levels.WARN)
    return
  end
  local function send(a)
    if a and vim.trim(a) ~= "" then
      call(methods.MethodRunClarificationAnswer, { runId = id, clarificationId = q.id, answer = a })
    end
  end
  local opts = nn(q.options) or {}
  if #opts == 0 then
    return vim.ui.input({ prompt = "apserver: " .. s(q.question) .. " " }, send)
  end
  local items = vim.list_extend(vim.deepcopy(opts), { "other…" })
  vim.ui.select(items, { prompt = "apserver: " .. s(q.question) }, function(choice, idx)
    if idx == #items then
      vim.ui.input({ prompt = "apserver: " .. s(q.question) .. " " }, send)
    else
      send(choice)
    end
  end)
end

function M.cancel()
  local id = current()
  if not id then
    return
  end
  vim.ui.select({ "no", "yes" }, { prompt = "apserver: cancel run " .. id:sub(1, 12) .. "? (its branch is kept)" }, function(a)
    if a == "yes" then
      call(methods.MethodRunCancel, { runId = id })
    end
  end)
end

function M.task_thread()
  local b = vim.api.nvim_get_current_buf()
  local at = M.task_at and M.task_at[b] or {}
  local t = at[vim.api.nvim_win_get_cursor(0)[1]]
  if not t then
    return
  end
  local tid = s(t.threadId)
  if tid == "" then
    notify("task " .. s(t.id) .. " has no thread yet")
    return
  end
  app().resume(tid)
end

-- M.edit opens the plan as YAML; :w sends it with run/plan/update.
function M.edit()
  local id, run = current()
  if not id then
    return
  end
  local plan = nn(run.plan) or {}
  local name = "apserver://run/" .. id .. "/plan.yaml"
  local old = vim.fn.bufnr(name)
  if old > 0 then
    vim.api.nvim_buf_delete(old, { force = true })
  end
  local b = vim.api.nvim_create_buf(false, false)
  vim.api.nvim_buf_set_name(b, name)
  vim.bo[b].buftype = "acwrite"
  vim.bo[b].bufhidden = "wipe"
  vim.bo[b].swapfile = false
  vim.api.nvim_buf_set_lines(b, 0, -1, false, yaml.encode(nn(plan.tasks) or {}, {
    ("The plan of run %s, version %s. Edit, delete, add or reorder tasks;"):format(id:sub(1, 12), s(plan.version)),
    ":w sends it (run/plan/update) while the plan waits for approval.",
    "risk: low | medium | high. dependencies: ids of tasks in this list.",
  }))
  vim.bo[b].modified = false
  vim.bo[b].filetype = "yaml"
  vim.api.nvim_buf_set_var(b, "apserver_plan_of", id)
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = b,
    callback = function()
      M.write_plan(b)
    end,
  })
  vim.cmd("split")
  vim.api.nvim_win_set_buf(0, b)
  return b
end

-- M.write_plan sends the plan buffer b; the buffer stays modified until
-- apserver took it.
function M.write_plan(b)
  local id = vim.api.nvim_buf_get_var(b, "apserver_plan_of")
  local tasks, err = yaml.decode(vim.api.nvim_buf_get_lines(b, 0, -1, false))
  if not tasks then
    notify("the plan was not sent: " .. err, vim.log.levels.ERROR)
    return
  end
  call(methods.MethodRunPlanUpdate, { runId = id, tasks = yaml.wire(tasks) }, function(res)
    if res and vim.api.nvim_buf_is_valid(b) then
      vim.bo[b].modified = false
      local plan = nn(res.run.plan) or {}
      notify(("plan updated: version %s, %d tasks"):format(s(plan.version), #(nn(plan.tasks) or {})))
    end
  end)
end

-- the list ----------------------------------------------------------------

function M.list_lines()
  local lines, ids = { "Runs (<CR> opens, gr refreshes, q closes)" }, {}
  for _, id in ipairs(M.order) do
    local r = M.runs[id]
    if r then
      local c = nn(r.counts) or {}
      local st = s(r.status)
      if s(r.waitingFor) ~= "" then
        st = st .. ":" .. s(r.waitingFor)
      end
      table.insert(lines, ("%s  %-26s %-15s %d/%d  %s"):format(id:sub(1, 12), st, s(r.stage), c.completed or 0, c.total or 0, s(r.request):gsub("\n", " "):sub(1, 60)))
      ids[#lines] = id
    end
  end
  if #lines == 1 then
    table.insert(lines, "(no runs; :ApserverRun {request} starts one)")
  end
  return lines, ids
end

function M.draw_list()
  local b = M.list_buf
  if not (b and vim.api.nvim_buf_is_valid(b)) then
    return
  end
  local lines, ids = M.list_lines()
  M.list_ids = ids
  set_lines(b, lines)
end

-- M.list opens :ApserverRuns, read with run/list.
function M.list()
  local b = M.list_buf
  if not (b and vim.api.nvim_buf_is_valid(b)) then
    b = buffers.scratch("apserver://runs", "apserver-runs", {}, {
      { "<CR>", function()
        local id = buffers.line_at(M.list_ids)
        if id then
          M.open(id)
        end
      end, "open the run" },
      { "gr", M.load_list, "read the list again" },
    })
    M.list_buf = b
  end
  buffers.show(b, "botright split")
  M.draw_list()
  M.load_list()
  return b
end

function M.load_list(cb)
  call(methods.MethodRunList, vim.empty_dict(), function(res)
    if not res then
      return
    end
    M.order = {}
    for _, r in ipairs(res.runs or {}) do
      table.insert(M.order, r.id)
      M.runs[r.id] = r
    end
    M.draw_list()
    if cb then
      cb(res)
    end
  end)
end

-- notifications -----------------------------------------------------------

local reading = {}

local function patch(id, fields)
  local r = M.runs[id]
  if not r then
    -- a run started elsewhere: read it once
    if not reading[id] then
      reading[id] = true
      with_client(function(c)
        c:request(methods.MethodRunRead, { runId = id }, function(err, res)
          reading[id] = nil
          if not err and res then
            M.put(res.run)
          end
        end)
      end)
    end
    return
  end
  for k, v in pairs(fields) do
    r[k] = v
  end
  changed(id)
end

-- M.on_notification takes every run/* notification (init.lua passes them).
function M.on_notification(method, p)
  if method == methods.NotifyRunStarted or method == methods.NotifyRunCompleted then
    M.put(p.run)
    if method == methods.NotifyRunCompleted and M.bufs[p.run.id] then
      notify(("run %s %s"):format(p.run.id:sub(1, 12), s(p.run.status)))
    end
  elseif method == methods.NotifyRunUpdated then
    local r = M.runs[p.runId]
    if r and M.bufs[p.runId] and (s(r.status) ~= s(p.status) or s(r.waitingFor) ~= s(p.waitingFor)) then
      -- what it waits for changed: the repair proposal, the answered
      -- question and the plan's approval come with the whole run
      schedule("read" .. p.runId, function()
        with_client(function(c)
          c:request(methods.MethodRunRead, { runId = p.runId }, function(err, res)
            if not err and res then
              M.put(res.run)
            end
          end)
        end)
      end)
    end
    patch(p.runId, {
      status = p.status,
      stage = p.stage,
      waitingFor = p.waitingFor,
      reason = p.reason,
      currentTaskId = p.currentTaskId,
      queuePosition = p.queuePosition,
      counts = p.counts,
    })
  elseif method == methods.NotifyRunPlanUpdated then
    patch(p.runId, { plan = p.plan })
  elseif method == methods.NotifyRunTaskUpdated then
    local r = M.runs[p.runId]
    if r then
      local plan = nn(r.plan) or { tasks = {} }
      local tasks = nn(plan.tasks) or {}
      local found = false
      for i, t in ipairs(tasks) do
        if t.id == p.task.id then
          tasks[i] = p.task
          found = true
        end
      end
      if not found then
        table.insert(tasks, p.task)
      end
      plan.tasks = tasks
      patch(p.runId, { plan = plan })
    else
      patch(p.runId, {})
    end
  elseif method == methods.NotifyRunClarificationRequested then
    local r = M.runs[p.runId]
    if r then
      local list = nn(r.clarifications) or {}
      local found = false
      for i, q in ipairs(list) do
        if q.id == p.clarification.id then
          list[i] = p.clarification
          found = true
        end
      end
      if not found then
        table.insert(list, p.clarification)
      end
      patch(p.runId, { clarifications = list })
    else
      patch(p.runId, {})
    end
  end
end

return M
