-- apserver: the Neovim front end of apserver. setup() takes the options
-- (apserver.config); the commands in plugin/apserver.lua call the
-- functions here. One apserver process serves every chat; each thread has
-- one chat (apserver.chat). Full-auto state is kept per thread for the
-- status line component.
local config = require("apserver.config")
local client_mod = require("apserver.client")
local methods = require("apserver.methods")
local nn = client_mod.nn

local M = {}

-- M.state: the client, the chats by thread id, the full-auto runs by thread
-- id and the attention count. Owned by the main loop.
M.state = { client = nil, chats = {}, runs = {}, attention = 0, current = nil, log = {} }
local S = M.state

function M.setup(opts)
  config.set(opts)
  return M
end

local function notify(msg, level)
  vim.notify("apserver: " .. msg, level or vim.log.levels.INFO)
end

-- log buffer -----------------------------------------------------------

local function log(line)
  table.insert(S.log, line)
  if #S.log > 5000 then
    table.remove(S.log, 1)
  end
  local b = S.log_buf
  if b and vim.api.nvim_buf_is_valid(b) then
    vim.schedule(function()
      if vim.api.nvim_buf_is_valid(b) then
        vim.bo[b].modifiable = true
        vim.api.nvim_buf_set_lines(b, -1, -1, false, { line })
        vim.bo[b].modifiable = false
      end
    end)
  end
end
M._log = log

function M.open_log()
  if not (S.log_buf and vim.api.nvim_buf_is_valid(S.log_buf)) then
    local b = vim.api.nvim_create_buf(false, true)
    vim.bo[b].buftype = "nofile"
    vim.bo[b].bufhidden = "hide"
    pcall(vim.api.nvim_buf_set_name, b, "apserver://log")
    vim.api.nvim_buf_set_lines(b, 0, -1, false, S.log)
    vim.bo[b].modifiable = false
    S.log_buf = b
  end
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, S.log_buf)
  vim.cmd("normal! G")
end

-- the client -----------------------------------------------------------

local function redraw_status()
  pcall(vim.cmd, "redrawstatus!")
end
M.changed = redraw_status

local function on_request(method, params, respond, id)
  local chat = S.chats[params.threadId]
  if method == methods.RequestCommandApproval or method == methods.RequestFileChangeApproval then
    if not chat then
      respond(nil, { code = -32603, message = "no chat is open for this thread" })
      return
    end
    local kind = method == methods.RequestFileChangeApproval and "fileChange" or "command"
    chat:add_approval(id, kind, params, respond)
    if not chat:window() then
      notify("a " .. kind .. " waits for approval in thread " .. params.threadId:sub(1, 13), vim.log.levels.WARN)
    end
  elseif method == methods.RequestUserInput then
    require("apserver.ask").questions(params.questions or {}, function(answers)
      if answers then
        respond({ answers = answers })
      else
        respond(nil, { code = -32800, message = "the user dismissed the question" })
      end
    end)
  elseif method == methods.RequestItemToolCall then
    respond(require("apserver.tools").call(params)) -- the editor's dynamic tools
  else
    respond(nil, { code = -32601, message = "Method not found: " .. method })
  end
end

local function on_notification(method, params)
  if method == methods.NotifyFullAutoStatusChanged then
    local run = nn(params.run) or {}
    run.state = params.state
    S.runs[params.threadId] = vim.tbl_extend("force", S.runs[params.threadId] or {}, run)
    redraw_status()
  elseif method == methods.NotifyFullAutoDecision then
    local r = S.runs[params.threadId] or {}
    r.lastDecision = params.receipt
    S.runs[params.threadId] = r
    local chat = S.chats[params.threadId]
    if chat then
      local rc = params.receipt or {}
      chat:note(("⟳ full auto: %s — %s"):format(tostring(nn(rc.action)), tostring(nn(rc.reason))))
    end
    redraw_status()
  elseif method == methods.NotifyAttention then
    S.attention = params.count or 0
    S.attention_items = params.items or {}
    redraw_status()
  end
  -- runs and blueprints keep their own buffers (apserver.runs, apserver.blueprint)
  if method:sub(1, 4) == "run/" then
    require("apserver.runs").on_notification(method, params)
  elseif method:sub(1, 10) == "blueprint/" then
    require("apserver.blueprint").on_notification(method, params)
  end
  -- the project's status follows ticks, settings, runs and the attention summary
  if package.loaded["apserver.project"] then
    require("apserver.project").on_notification(method, params)
  end
  local tid = nn(params.threadId) or (type(params.thread) == "table" and params.thread.id)
  local chat = tid and S.chats[tid]
  if chat then
    chat:on_notification(method, params)
    if method == methods.NotifyTurnStarted or method == methods.NotifyTurnCompleted then
      redraw_status()
    end
  end
  if M.on_notification_hook then
    M.on_notification_hook(method, params)
  end
end

-- M.client returns the client, starting apserver when needed; cb(err).
function M.client(cb)
  cb = cb or function() end
  if not S.client then
    local o = config.options
    local args = vim.list_extend(vim.deepcopy(o.args), o.extra_args or {})
    S.client = client_mod.new({
      cmd = o.cmd,
      args = args,
      env = o.env,
      cwd = o.cwd,
      restart = o.restart,
      restart_delay_ms = o.restart_delay_ms,
      client_info = { name = "apserver.nvim", version = M.version },
      capabilities = { experimentalApi = true }, -- for the editor's dynamic tools (tools.lua)
      on_notification = on_notification,
      on_request = on_request,
      on_stderr = log,
      on_state = function(state, message)
        if message then
          log("[" .. state .. "] " .. message)
          notify(message, state == "failed" and vim.log.levels.ERROR or vim.log.levels.WARN)
        end
        redraw_status()
      end,
      on_ready = function(_, restarted)
        -- the manager's mode and state for the status line
        require("apserver.project").watch()
        if restarted then
          M._resume_all()
        end
      end,
    })
  end
  local c = S.client
  if c.state == "ready" then
    cb(nil, c)
  elseif c.job and c.state ~= "failed" then
    -- starting: wait for it
    local timer = vim.loop.new_timer()
    local waited = 0
    timer:start(20, 20, vim.schedule_wrap(function()
      waited = waited + 20
      if c.state == "ready" or not c.job or waited > 15000 then
        timer:stop()
        timer:close()
        if c.state == "ready" then
          cb(nil, c)
        else
          cb({ message = "apserver did not start (" .. c.state .. ")" })
        end
      end
    end))
  else
    c.crashes = {}
    c:start(function(err)
      cb(err, c)
    end)
  end
end

-- after a restart every open chat resumes its thread
function M._resume_all()
  for tid, chat in pairs(S.chats) do
    -- the requests of the old process died with it
    chat.approvals = {}
    S.client:request(methods.MethodThreadResume, { threadId = tid }, function(err, res)
      if err then
        chat:note("⚠ could not resume the thread after the restart: " .. (err.message or "?"))
        return
      end
      chat:load(res.thread)
      chat:note("── apserver restarted; thread resumed ──")
    end)
  end
end

local function with_client(fn)
  M.client(function(err, c)
    if err then
      notify(err.message or "could not start apserver", vim.log.levels.ERROR)
      return
    end
    fn(c)
  end)
end

-- chats ----------------------------------------------------------------

local function open_chat(thread)
  local chat = S.chats[thread.id]
  if not chat then
    chat = require("apserver.chat").new(thread, M)
    S.chats[thread.id] = chat
  end
  S.current = chat
  chat:open()
  return chat
end

-- M.current_chat is the chat of the current buffer, else the last one used.
function M.current_chat()
  local ok, tid = pcall(vim.api.nvim_buf_get_var, 0, "apserver_thread")
  if ok and S.chats[tid] then
    S.current = S.chats[tid]
  end
  return S.current
end

local function need_chat()
  local c = M.current_chat()
  if not c then
    notify("no chat; :ApserverNew starts one", vim.log.levels.WARN)
  end
  return c
end

-- M.new starts a thread and opens its chat; cb(chat) when ready.
function M.new(cb)
  with_client(function(c)
    local o = config.options
    local params = { cwd = o.cwd or vim.loop.cwd(), dynamicTools = require("apserver.tools").specs }
    if o.approval_policy then
      params.approvalPolicy = o.approval_policy
    end
    c:request(methods.MethodThreadStart, params, function(err, res)
      if err then
        notify("thread/start: " .. (err.message or "?"), vim.log.levels.ERROR)
        return
      end
      local chat = open_chat(res.thread)
      vim.cmd("startinsert")
      if cb then
        cb(chat)
      end
    end)
  end)
end

function M.threads()
  with_client(function(c)
    c:request(methods.MethodThreadList, { limit = 50 }, function(err, res)
      if err then
        notify("thread/list: " .. (err.message or "?"), vim.log.levels.ERROR)
        return
      end
      local threads = res.data or {}
      if #threads == 0 then
        notify("no threads yet; :ApserverNew starts one")
        return
      end
      vim.ui.select(threads, {
        prompt = "apserver: resume a thread",
        format_item = function(t)
          local name = nn(t.name) or nn(t.preview) or ""
          return ("%s  %s  %s"):format(t.id:sub(1, 13), os.date("%Y-%m-%d %H:%M", t.createdAt or 0), name:gsub("\n", " "):sub(1, 60))
        end,
      }, function(t)
        if t then
          M.resume(t.id)
        end
      end)
    end)
  end)
end

function M.resume(thread_id, cb)
  with_client(function(c)
    c:request(methods.MethodThreadResume, { threadId = thread_id }, function(err, res)
      if err then
        notify("thread/resume: " .. (err.message or "?"), vim.log.levels.ERROR)
        return
      end
      local chat = open_chat(res.thread)
      chat:load(res.thread)
      if cb then
        cb(chat)
      end
    end)
  end)
end

-- tell sends a request about chat's thread whose only answer that matters
-- is an error, which the chat then shows.
local function tell(chat, method, params)
  with_client(function(c)
    c:request(method, params, function(err)
      if err then
        chat:note("⚠ " .. method .. ": " .. (err.message or "?"))
      end
    end)
  end)
end

local function text_input(text)
  return { { type = "text", text = text, text_elements = {} } }
end

-- M.send starts a turn (on a busy thread apserver steers the running turn).
function M.send(chat, text)
  tell(chat, methods.MethodTurnStart, { threadId = chat.thread_id, input = text_input(text) })
end

function M.steer(text)
  local chat = need_chat()
  if not chat then
    return
  end
  if not chat.turn_id then
    notify("no turn is running; the text is sent as a new turn")
    return M.send(chat, text)
  end
  tell(chat, methods.MethodTurnSteer, { threadId = chat.thread_id, expectedTurnId = chat.turn_id, input = text_input(text) })
end

function M.interrupt(chat)
  chat = chat or need_chat()
  if not chat then
    return
  end
  if not chat.turn_id then
    notify("no turn is running")
    return
  end
  tell(chat, methods.MethodTurnInterrupt, { threadId = chat.thread_id, turnId = chat.turn_id })
end

-- M.compact asks apserver to compact the thread's context now
-- (thread/compact/start): a running turn is replaced by the compaction.
function M.compact(chat)
  chat = chat or need_chat()
  if not chat then
    return
  end
  tell(chat, methods.MethodThreadCompactStart, { threadId = chat.thread_id })
end

-- M.undo reverts the thread's last turn (files included), asking before
-- overwriting files changed outside apserver.
function M.undo(force)
  local chat = need_chat()
  if not chat then
    return
  end
  with_client(function(c)
    c:request(methods.MethodThreadRead, { threadId = chat.thread_id, includeTurns = true }, function(err, res)
      if err then
        notify("thread/read: " .. (err.message or "?"), vim.log.levels.ERROR)
        return
      end
      local turns = res.thread.turns or {}
      local last = turns[#turns]
      if not last then
        notify("nothing to undo")
        return
      end
      c:request(methods.MethodThreadRevert, { threadId = chat.thread_id, beforeTurnId = last.id, force = force or nil }, function(e2, r2)
        if e2 then
          if not force and (e2.message or ""):match("outside") then
            vim.ui.select({ "no", "yes" }, { prompt = "apserver: " .. e2.message .. " Overwrite them?" }, function(a)
              if a == "yes" then
                M.undo(true)
              end
            end)
          else
            notify("thread/revert: " .. (e2.message or "?"), vim.log.levels.ERROR)
          end
          return
        end
        chat:load(r2.thread)
        local paths = r2.restoredPaths or {}
        chat:note(("── undone: the last turn; %d file(s) restored ──"):format(#paths))
      end)
    end)
  end)
end

function M.diff()
  local chat = need_chat()
  if not chat then
    return
  end
  return require("apserver.diff").open_turn_diff(chat.diff, chat.cwd, "apserver: turn diff " .. chat.thread_id:sub(1, 13))
end

-- M.approve answers the oldest pending approval of the current chat.
function M.approve(decision)
  local chat = need_chat()
  if not chat then
    return
  end
  if decision and decision ~= "" then
    return chat:answer(decision)
  end
  chat:choose()
end

-- full auto ------------------------------------------------------------

local function auto_call(method, extra, cb)
  local chat = need_chat()
  if not chat then
    return
  end
  with_client(function(c)
    c:request(method, vim.tbl_extend("force", { threadId = chat.thread_id }, extra or {}), function(err, res)
      if err then
        notify(method .. ": " .. (err.message or "?"), vim.log.levels.ERROR)
        return
      end
      if res and res.run then
        S.runs[chat.thread_id] = res.run
        redraw_status()
      end
      if cb then
        cb(res)
      end
    end)
  end)
end

-- M.auto starts full auto on the current chat's thread (a new thread when
-- there is none) toward objective, with the configured budgets.
function M.auto(objective, budgets)
  local o = config.options.auto
  local params = { budgets = budgets or o.budgets, approvals = o.approvals }
  if objective and objective ~= "" then
    params.objective = objective
  end
  if not M.current_chat() then
    return M.new(function()
      auto_call(methods.MethodFullAutoStart, params)
    end)
  end
  auto_call(methods.MethodFullAutoStart, params)
end

function M.auto_pause()
  auto_call(methods.MethodFullAutoPause)
end
function M.auto_resume()
  auto_call(methods.MethodFullAutoResume)
end
function M.auto_stop()
  auto_call(methods.MethodFullAutoStop)
end

local function human(n)
  if type(n) ~= "number" then
    return "∞"
  end
  if n >= 1e6 then
    return ("%.1fM"):format(n / 1e6)
  elseif n >= 1e3 then
    return ("%.1fk"):format(n / 1e3)
  end
  return tostring(math.floor(n))
end

-- M.auto_status describes thread_id's full-auto run: state, last decision
-- and reason, spent vs budget. Empty without a run.
function M.auto_status(thread_id)
  local run = thread_id and S.runs[thread_id]
  if not run then
    return ""
  end
  local s = "auto:" .. tostring(nn(run.state))
  local d = nn(run.lastDecision)
  if type(d) == "table" then
    s = s .. " " .. tostring(nn(d.action))
    local reason = nn(d.reason)
    if reason then
      s = s .. " (" .. reason:sub(1, 40) .. ")"
    end
  end
  local b, sp = nn(run.budgets) or {}, nn(run.spent) or {}
  return s .. (" turns %s/%s tok %s/%s"):format(human(nn(sp.turns) or 0), human(nn(b.turns)), human(nn(sp.tokens) or 0), human(nn(b.tokens)))
end

-- M.attention_kinds names what waits (" run approval, 2 question"), from
-- the last attention summary; a run's wait is named by what the run waits for.
function M.attention_kinds()
  local counts, order = {}, {}
  local runs = package.loaded["apserver.runs"] and package.loaded["apserver.runs"].runs or {}
  for _, it in ipairs(S.attention_items or {}) do
    local label = tostring(nn(it.kind) or "?")
    local rid = nn(it.runId)
    if rid then
      local wf = runs[rid] and nn(runs[rid].waitingFor)
      label = "run " .. (wf or label)
    end
    if not counts[label] then
      table.insert(order, label)
      counts[label] = 0
    end
    counts[label] = counts[label] + 1
  end
  local out = {}
  for _, l in ipairs(order) do
    table.insert(out, (counts[l] > 1 and (counts[l] .. " ") or "") .. l)
  end
  return #out > 0 and (" " .. table.concat(out, ", ")) or ""
end

-- M.statusline is the status line component: the current thread's full
-- auto state (M.auto_status), "working" during a turn, the server's state
-- when it is not ready, blueprint ingestions in flight ("ingest 3/7"), the
-- workspace's manager when its mode is not off ("manager full_auto:
-- waiting for you (1): run planApproval", apserver.project), and
-- ⚑N when N things wait on a human, with what they are (M.attention_kinds).
function M.statusline()
  local parts = {}
  local chat = S.current
  local auto = M.auto_status(chat and chat.thread_id)
  if auto ~= "" then
    table.insert(parts, auto)
  elseif chat and chat.turn_id then
    table.insert(parts, "apserver: working")
  end
  local c = S.client
  if c and c.state ~= "ready" and c.state ~= "stopped" then
    table.insert(parts, "apserver " .. c.state)
  end
  local ingest = package.loaded["apserver.blueprint"] and package.loaded["apserver.blueprint"].status() or ""
  if ingest ~= "" then
    table.insert(parts, ingest)
  end
  local manager = package.loaded["apserver.project"] and package.loaded["apserver.project"].statusline() or ""
  if manager ~= "" then
    table.insert(parts, manager)
  end
  if (S.attention or 0) > 0 then
    table.insert(parts, "⚑" .. S.attention .. M.attention_kinds())
  end
  return table.concat(parts, " · ")
end

-- lifecycle --------------------------------------------------------------

function M.stop()
  if S.client then
    S.client:stop()
  end
end

function M.restart()
  if S.client then
    S.client:stop()
    S.client.stopping = false
  end
  with_client(function()
    M._resume_all()
  end)
end

M.version = "0.1.0"
return M
