-- apserver.project: the project and its manager (docs/manager.md,
-- docs/brain.md) in Neovim. :ApserverProject shows project/status (mode,
-- the last tick and its result, tasks and runs by status, spend against
-- the budgets, what waits for the user, the manager's recent decisions)
-- and the project's decisions, with keys to add and revoke decisions, set
-- the mode, pause or resume the autopilot and tick. project/updated keeps
-- it live; M.statusline is the status line's part: the manager's mode and
-- state.
local methods = require("apserver.methods")
local buffers = require("apserver.buffers")
local nn = require("apserver.client").nn

local M = {}

-- M.status: project/status results by cwd; M.decisions: decision lists by
-- cwd; M.bufs: project buffers by cwd; M.watched: the cwds whose status is
-- kept (the status line's and the open buffers'). Owned by the main loop.
M.status = {}
M.decisions = {}
M.bufs = {}
M.watched = {}

local notify, call = buffers.notify, buffers.call

local function s(v)
  v = nn(v)
  if v == nil then
    return ""
  end
  return tostring(v)
end

local TERMINAL = { completed = true, failed = true, cancelled = true }

-- counts renders {status = n} as "a 1 · b 2", in a stable order.
local function counts(t)
  local keys = {}
  for k, n in pairs(nn(t) or {}) do
    if (n or 0) > 0 then
      table.insert(keys, k)
    end
  end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do
    table.insert(out, k .. " " .. t[k])
  end
  return #out > 0 and table.concat(out, " · ") or "none"
end

-- M.waits names what of the project waits on the user: "run planApproval,
-- approval" (a run by what it waits for, when the runs module knows it).
function M.waits(st)
  local runs = package.loaded["apserver.runs"] and package.loaded["apserver.runs"].runs or {}
  local out = {}
  for _, it in ipairs(nn(st.attention) or {}) do
    local rid = s(it.runId)
    if rid ~= "" then
      local wf = runs[rid] and s(runs[rid].waitingFor) or ""
      table.insert(out, "run " .. (wf ~= "" and wf or s(it.kind)))
    else
      table.insert(out, s(it.kind))
    end
  end
  return table.concat(out, ", ")
end

-- M.pill is the manager's state in a word or two: paused, budget
-- exhausted, error, waiting for you (N), running N, or idle.
function M.pill(st)
  local last = nn(st.lastTick) or {}
  local waiting = #(nn(st.attention) or {})
  local active = 0
  for k, n in pairs(nn(st.runs) or {}) do
    if not TERMINAL[k] and k ~= "waiting" and k ~= "paused" then
      active = active + (n or 0)
    end
  end
  if st.paused then
    return "paused"
  elseif s(last.result) == "budget_exhausted" then
    return "budget exhausted"
  elseif s(last.error) ~= "" then
    return "error"
  elseif waiting > 0 then
    return ("waiting for you (%d)"):format(waiting)
  elseif active > 0 then
    return ("running %d"):format(active)
  end
  return "idle"
end

local function clock(ms)
  ms = nn(ms)
  if not ms or ms == 0 then
    return "never"
  end
  return os.date("%H:%M:%S", math.floor(ms / 1000))
end

local function budget(spent, limit, fmt)
  fmt = fmt or "%d"
  return fmt:format(spent or 0) .. "/" .. (((limit or 0) > 0) and fmt:format(limit) or "∞")
end

-- M.render returns the project buffer's lines and, by line number, the
-- decision shown there.
function M.render(cwd, st, decisions)
  local lines, at = {}, {}
  local function add(l, d)
    table.insert(lines, (l:gsub("\n", " ")))
    if d then
      at[#lines] = d
    end
  end
  if not st then
    add("Project " .. cwd .. " · loading…")
    return lines, at
  end
  add(("Project %s · mode %s · %s"):format(s(st.cwd) ~= "" and s(st.cwd) or cwd, s(st.mode), M.pill(st)))
  local phase = s(st.phase) ~= "" and s(st.phase) or "(the first unfinished)"
  add(("blueprint %s · phase %s%s"):format(s(st.blueprintId) ~= "" and s(st.blueprintId) or "(none)", phase, st.phaseDone and " · done" or ""))
  local last = nn(st.lastTick)
  if last then
    local l = ("last tick %s: %s — %s"):format(clock(st.lastTickAtMs), s(last.result), s(last.reason))
    if s(last.runId) ~= "" then
      l = l .. " · run " .. s(last.runId)
    end
    if s(last.error) ~= "" then
      l = l .. " · error: " .. s(last.error)
    end
    add(l)
  else
    add("last tick: none")
  end
  add("tasks: " .. counts(st.tasks))
  add("runs: " .. counts(st.runs))
  local sp = nn(st.spend) or {}
  local bg = nn(sp.budget) or {}
  add(("spend today: runs %s · tokens %s · cost %s"):format(budget(sp.runs, bg.runsPerDay), budget(sp.tokens, bg.tokensPerDay), budget(sp.cost, bg.costPerDay, "%.2f")))
  local attn = nn(st.attention) or {}
  add("")
  add(("── waits for you (%d) ──"):format(#attn))
  for _, it in ipairs(attn) do
    add(("  ⚑ %s: %s"):format(s(it.kind), s(it.reason)))
  end
  local recent = nn(st.recent) or {}
  if #recent > 0 then
    add("")
    add("── the manager's last decisions ──")
    for _, r in ipairs(recent) do
      if s(r.kind) == "intent" then
        add(("  %s intent %s %q — %s"):format(clock(r.atMs), s(r.intent), s(r.target), s(r.message):sub(1, 120)))
      else
        add(("  %s tick %s — %s"):format(clock(r.atMs), s(r.result), s(r.reason):sub(1, 160)))
      end
    end
  end
  add("")
  add("── decisions (a adds, d revokes) ──")
  if not decisions then
    add("  (loading…)")
  elseif #decisions == 0 then
    add("  (none)")
  end
  for _, d in ipairs(decisions or {}) do
    local l = ("  ● %s  [%s]  %s"):format(s(d.title), s(d.status), s(d.id))
    add(l, d)
    if s(d.text) ~= "" then
      add("      " .. s(d.text):sub(1, 200), d)
    end
    if s(d.why) ~= "" then
      add("      why: " .. s(d.why):sub(1, 200), d)
    end
  end
  add("")
  add("keys: a add decision  d revoke  m mode  p pause/resume  T tick  gr refresh  q close")
  return lines, at
end

function M.draw(cwd)
  local b = M.bufs[cwd]
  if not (b and vim.api.nvim_buf_is_valid(b)) then
    return
  end
  local lines, at = M.render(cwd, M.status[cwd], M.decisions[cwd])
  M.at = M.at or {}
  M.at[b] = at
  buffers.set_lines(b, lines)
end

-- M.refresh reads the status of cwd (and its decisions while its buffer
-- is open); cb() once both are in. quiet: errors are not shown (the status
-- line's reads).
function M.refresh(cwd, cb, quiet)
  local left = 1
  local function done()
    left = left - 1
    if left == 0 then
      M.draw(cwd)
      buffers.redraw_status()
      if cb then
        cb()
      end
    end
  end
  local function req(method, params, on)
    if quiet then
      -- never starts apserver (nor starts it again after it stopped)
      local c = require("apserver").state.client
      if not (c and c.state == "ready") then
        return done()
      end
      c:request(method, params, function(err, res)
        if not err then
          on(res)
        end
        done()
      end)
    else
      call(method, params, function(res)
        if res then
          on(res)
        end
        done()
      end)
    end
  end
  local b = M.bufs[cwd]
  if b and vim.api.nvim_buf_is_valid(b) then
    left = 2
    req(methods.MethodProjectDecisionList, { cwd = cwd }, function(res)
      M.decisions[cwd] = res.decisions or {}
    end)
  end
  req(methods.MethodProjectStatus, { cwd = cwd }, function(res)
    M.status[cwd] = res
  end)
end

-- M.watch keeps cwd's status for the status line (read now and after each
-- project/updated).
function M.watch(cwd)
  cwd = cwd or buffers.cwd()
  M.watched[cwd] = true
  M.refresh(cwd, nil, true)
end

-- M.statusline is the manager's part of the status line for the
-- workspace: "manager full_auto: running 1", "manager semi_auto: waiting
-- for you (1): run planApproval". Empty while the mode is off or unknown.
function M.statusline(cwd)
  local st = M.status[cwd or buffers.cwd()]
  if not st or s(st.mode) == "" or st.mode == "off" then
    return ""
  end
  local l = ("manager %s: %s"):format(st.mode, M.pill(st))
  local w = M.waits(st)
  if w ~= "" then
    l = l .. ": " .. w
  end
  return l
end

local function buf_cwd()
  local ok, cwd = pcall(vim.api.nvim_buf_get_var, 0, "apserver_project")
  if ok then
    return cwd
  end
end

-- M.open shows the project of cwd (default the workspace).
function M.open(cwd)
  cwd = (cwd and cwd ~= "") and vim.fn.fnamemodify(vim.fn.expand(cwd), ":p"):gsub("/$", "") or buffers.cwd()
  local b = M.bufs[cwd]
  if not (b and vim.api.nvim_buf_is_valid(b)) then
    b = buffers.scratch("apserver://project/" .. cwd, "apserver-project", { apserver_project = cwd }, {
      { "a", M.add_decision, "add a decision" },
      { "d", M.revoke_decision, "revoke the decision under the cursor" },
      { "m", M.set_mode, "set the manager's mode" },
      { "p", M.toggle_pause, "pause or resume the autopilot" },
      { "T", M.tick, "tick the manager now" },
      { "gr", function() M.refresh(cwd) end, "read the project again" },
    })
    M.bufs[cwd] = b
  end
  M.watched[cwd] = true
  buffers.show(b, "botright split")
  M.draw(cwd)
  M.refresh(cwd)
  return b
end

-- M.add_decision asks for a title, then what was decided and why.
function M.add_decision()
  local cwd = buf_cwd()
  if not cwd then
    return
  end
  vim.ui.input({ prompt = "apserver: decision (title): " }, function(title)
    if not title or vim.trim(title) == "" then
      return
    end
    vim.ui.input({ prompt = "apserver: what was decided (optional): " }, function(text)
      vim.ui.input({ prompt = "apserver: why (optional): " }, function(why)
        local p = { cwd = cwd, title = vim.trim(title) }
        if text and vim.trim(text) ~= "" then
          p.text = vim.trim(text)
        end
        if why and vim.trim(why) ~= "" then
          p.why = vim.trim(why)
        end
        call(methods.MethodProjectDecisionAdd, p, function(res)
          if res then
            notify(("decision %s added"):format(s(res.decision.id)))
            M.refresh(cwd)
          end
        end)
      end)
    end)
  end)
end

-- M.revoke_decision revokes the decision under the cursor, with a reason.
function M.revoke_decision()
  local cwd = buf_cwd()
  local d = cwd and buffers.line_at(M.at and M.at[vim.api.nvim_get_current_buf()])
  if not d then
    notify("no decision under the cursor", vim.log.levels.WARN)
    return
  end
  vim.ui.input({ prompt = ("apserver: revoke %q? reason (empty cancels): "):format(s(d.title)) }, function(reason)
    if not reason or vim.trim(reason) == "" then
      return
    end
    call(methods.MethodProjectDecisionRevoke, { id = d.id, reason = vim.trim(reason) }, function(res)
      if res then
        notify(("decision %s revoked"):format(s(d.id)))
        M.refresh(cwd)
      end
    end)
  end)
end

local MODES = { "off", "suggest", "semi_auto", "full_auto" }

function M.set_mode()
  local cwd = buf_cwd()
  if not cwd then
    return
  end
  vim.ui.select(MODES, { prompt = "apserver: the manager's mode" }, function(mode)
    if mode then
      call(methods.MethodProjectSettingsUpdate, { cwd = cwd, mode = mode }, function()
        M.refresh(cwd)
      end)
    end
  end)
end

function M.toggle_pause()
  local cwd = buf_cwd()
  if not cwd then
    return
  end
  local st = M.status[cwd] or {}
  call(methods.MethodProjectSettingsUpdate, { cwd = cwd, paused = not st.paused }, function()
    M.refresh(cwd)
  end)
end

-- M.describe_tick says what a tick did, in one line.
function M.describe_tick(t)
  local l = ("manager: %s — %s"):format(s(t.result), s(t.reason))
  if s(t.runId) ~= "" then
    l = l .. " (run " .. s(t.runId) .. ")"
  end
  if s(t.error) ~= "" then
    l = l .. " · error: " .. s(t.error)
  end
  return l
end

-- M.tick ticks the manager of cwd (default: the buffer's) and says what it
-- did; cb(result).
function M.tick(cwd, cb)
  cwd = type(cwd) == "string" and cwd or buf_cwd() or buffers.cwd()
  call(methods.MethodManagerTick, { cwd = cwd }, function(res)
    if res then
      notify(M.describe_tick(res))
      M.refresh(cwd, nil, true)
    end
    if cb then
      cb(res)
    end
  end)
end

-- M.on_notification takes project/updated, and the run notifications that
-- change a project's counts.
function M.on_notification(method, p)
  if method == methods.NotifyProjectUpdated or method == methods.NotifyRunStarted or method == methods.NotifyRunCompleted or method == methods.NotifyAttention then
    for cwd in pairs(M.watched) do
      buffers.schedule("project:" .. cwd, function()
        M.refresh(cwd, nil, true)
      end)
    end
  end
end

return M
