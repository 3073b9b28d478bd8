-- apserver.chat: the chat buffer of one thread and its prompt buffer.
-- Every item is a block of lines whose first line carries an extmark, so
-- blocks keep their place while others grow. Streamed agent text is added
-- at the end of its block with nvim_buf_set_text (nothing is redrawn,
-- cursors stay), batched every flush_ms so a fast stream never floods the
-- main loop. Windows whose cursor sat on the last line follow the output.
local config = require("apserver.config")
local render = require("apserver.render")
local nn = require("apserver.client").nn
local methods = require("apserver.methods")

local M = {}
local ns = vim.api.nvim_create_namespace("apserver_chat")
M.ns = ns

local Chat = {}
Chat.__index = Chat

local function split(s)
  return vim.split(s, "\n", { plain = true })
end

-- named_buf makes a scratch buffer called name, replacing a stale one of
-- the same name (a chat that was closed and is opened again).
local function named_buf(name)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  return buf
end

-- M.new makes the buffers of thread (a Thread object of the protocol).
function M.new(thread, app)
  local self = setmetatable({}, Chat)
  self.app = app
  self.thread_id = thread.id
  self.cwd = nn(thread.cwd) or vim.loop.cwd()
  self.blocks = {}
  self.approvals = {} -- pending approvals in arrival order
  self.turn_id = nil
  self.turn_status = nil
  self.diff = nil
  self.changed = {}
  self.pending_flush = false

  local buf = named_buf("apserver://" .. thread.id)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "apserver"
  vim.api.nvim_buf_set_var(buf, "apserver_thread", thread.id)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {
    ("apserver · thread %s · %s"):format(thread.id:sub(1, 13), self.cwd),
  })
  vim.bo[buf].modifiable = false
  self.buf = buf

  local pbuf = named_buf("apserver-prompt://" .. thread.id)
  vim.bo[pbuf].buftype = "nofile"
  vim.bo[pbuf].bufhidden = "hide"
  vim.bo[pbuf].swapfile = false
  vim.bo[pbuf].filetype = "apserverprompt"
  vim.api.nvim_buf_set_var(pbuf, "apserver_thread", thread.id)
  self.prompt_buf = pbuf
  self:_map()
  return self
end

function Chat:_map()
  local keys = config.options.keys
  local function map(buf, mode, lhs, fn, desc)
    if lhs and lhs ~= "" then
      vim.keymap.set(mode, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
  local function answer(d)
    return function()
      self:answer(d)
    end
  end
  map(self.buf, "n", keys.accept, answer("accept"), "apserver: accept")
  map(self.buf, "n", keys.accept_session, answer("acceptForSession"), "apserver: accept for the session")
  map(self.buf, "n", keys.decline, answer("decline"), "apserver: decline")
  map(self.buf, "n", keys.cancel, answer("cancel"), "apserver: cancel the turn")
  map(self.buf, "n", keys.choose, function()
    self:choose()
  end, "apserver: answer the approval")
  map(self.buf, "n", keys.diff, function()
    self:open_change_diff()
  end, "apserver: side-by-side diff")
  for _, b in ipairs({ self.buf, self.prompt_buf }) do
    map(b, "n", keys.interrupt, function()
      self.app.interrupt(self)
    end, "apserver: interrupt")
  end
  map(self.prompt_buf, "n", "<CR>", function()
    self:send_prompt()
  end, "apserver: send")
  map(self.prompt_buf, { "n", "i" }, "<C-s>", function()
    self:send_prompt()
  end, "apserver: send")
end

-- open shows the chat (layout from the options) with its prompt under it,
-- and puts the cursor in the prompt.
function Chat:open()
  local o = config.options
  local win = self:window()
  if not win then
    local function size(v, total)
      return v <= 1 and math.floor(total * v) or v
    end
    if o.layout == "float" then
      -- the chat and, under it, the prompt: two floats in one column
      local w, h = size(o.width, vim.o.columns), size(o.height, vim.o.lines)
      local row = math.floor((vim.o.lines - h - o.prompt_height - 2) / 2)
      local col = math.floor((vim.o.columns - w) / 2)
      win = vim.api.nvim_open_win(self.buf, true, {
        relative = "editor", width = w, height = h, row = row, col = col, border = "rounded",
      })
      self.float_prompt = { relative = "editor", width = w, height = o.prompt_height,
        row = row + h + 2, col = col, border = "rounded" }
    else
      if o.layout == "tab" then
        vim.cmd("tabnew")
      elseif o.layout == "split" then
        vim.cmd("botright " .. size(o.height, vim.o.lines) .. "split")
      else
        vim.cmd("botright " .. size(o.width, vim.o.columns) .. "vsplit")
      end
      win = vim.api.nvim_get_current_win()
      local scratch = vim.api.nvim_get_current_buf()
      vim.api.nvim_win_set_buf(win, self.buf)
      if scratch ~= self.buf and vim.api.nvim_buf_is_valid(scratch) and vim.api.nvim_buf_get_name(scratch) == ""
        and not vim.bo[scratch].modified and #vim.fn.win_findbuf(scratch) == 0 then
        pcall(vim.api.nvim_buf_delete, scratch, {})
      end
    end
    local wo = vim.wo[win]
    wo.wrap = true
    wo.linebreak = true
    wo.number = false
    wo.relativenumber = false
    wo.foldmethod = "expr"
    wo.foldexpr = [[getline(v:lnum)=~#'^  ┊'?1:0]]
    wo.foldlevel = 0
    wo.foldenable = true
    wo.foldtext = [['  ┊ reasoning ('.(v:foldend-v:foldstart+1).' lines, zo opens)']]
    wo.statusline = "%{v:lua.require'apserver.chat'.title(" .. self.buf .. ")}"
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(self.buf), 0 })
  else
    vim.api.nvim_set_current_win(win)
  end
  if #vim.fn.win_findbuf(self.prompt_buf) == 0 then
    if o.layout == "float" and self.float_prompt then
      vim.api.nvim_open_win(self.prompt_buf, true, self.float_prompt)
    else
      vim.cmd("belowright " .. o.prompt_height .. "split")
      vim.api.nvim_win_set_buf(0, self.prompt_buf)
    end
    vim.wo.winfixheight = true
    vim.wo.number = false
    vim.wo.statusline = "apserver prompt · <CR>/<C-s> sends · <C-c> interrupts"
  else
    vim.fn.win_gotoid(vim.fn.win_findbuf(self.prompt_buf)[1])
  end
end

function Chat:window()
  return vim.fn.win_findbuf(self.buf)[1]
end

-- _edit runs fn with the buffer modifiable and keeps following windows at
-- the bottom.
function Chat:_edit(fn)
  local buf = self.buf
  local last = vim.api.nvim_buf_line_count(buf)
  local follow = {}
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(w)[1] >= last then
      table.insert(follow, w)
    end
  end
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  if #follow > 0 then
    local n = vim.api.nvim_buf_line_count(buf)
    for _, w in ipairs(follow) do
      pcall(vim.api.nvim_win_set_cursor, w, { n, 0 })
    end
  end
  if not ok then
    error(err)
  end
end

function Chat:_row(b)
  return vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, b.mark, {})[1]
end

-- add_block appends a block (after a blank line) and returns it.
function Chat:add_block(key, lines)
  self:flush()
  local b = { key = key, nlines = #lines }
  self:_edit(function()
    local row = vim.api.nvim_buf_line_count(self.buf)
    local with_gap = { "" }
    vim.list_extend(with_gap, lines)
    vim.api.nvim_buf_set_lines(self.buf, row, row, false, with_gap)
    -- right_gravity = false: replacing the block's lines leaves the mark
    -- on its first line instead of pushing it below the new text
    b.mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row + 1, 0, { right_gravity = false })
  end)
  if key then
    self.blocks[key] = b
  end
  return b
end

-- set_block replaces the lines of block key (adding it when missing).
function Chat:set_block(key, lines)
  local b = self.blocks[key]
  if not b then
    return self:add_block(key, lines)
  end
  b.pending = nil
  self:_edit(function()
    local row = self:_row(b)
    vim.api.nvim_buf_set_lines(self.buf, row, row + b.nlines, false, lines)
    b.nlines = #lines
  end)
  return b
end

-- append_text streams text at the end of block key (drawn at the next flush).
function Chat:append_text(key, text)
  local b = self.blocks[key] or self:add_block(key, { "" })
  b.pending = b.pending or {}
  table.insert(b.pending, text)
  self.dirty = self.dirty or {}
  self.dirty[key] = b
  if not self.pending_flush then
    self.pending_flush = true
    vim.defer_fn(function()
      self:flush()
    end, config.options.flush_ms)
  end
end

-- flush draws the streamed text waiting in every block.
function Chat:flush()
  self.pending_flush = false
  local dirty = self.dirty
  self.dirty = nil
  if not dirty or not vim.api.nvim_buf_is_valid(self.buf) then
    return
  end
  self:_edit(function()
    for _, b in pairs(dirty) do
      if b.pending then
        local text = table.concat(b.pending)
        b.pending = nil
        local last = self:_row(b) + b.nlines - 1
        local len = #(vim.api.nvim_buf_get_lines(self.buf, last, last + 1, false)[1] or "")
        local parts = split(text)
        vim.api.nvim_buf_set_text(self.buf, last, len, last, len, parts)
        b.nlines = b.nlines + #parts - 1
      end
    end
  end)
end

-- text returns the whole chat buffer as one string (for tests and yanking).
function Chat:text()
  self:flush()
  return table.concat(vim.api.nvim_buf_get_lines(self.buf, 0, -1, false), "\n")
end

function Chat:note(line)
  self:add_block(nil, split(line))
end

function Chat:_approval_for(item_id)
  for _, a in ipairs(self.approvals) do
    if a.item_id == item_id then
      return a
    end
  end
end

function Chat:render_item(item)
  self.items = self.items or {}
  local prev = self.items[item.id]
  if prev and prev ~= item and prev._output and not nn(item.aggregatedOutput) then
    item._output = prev._output
  end
  self.items[item.id] = item
  local a = self:_approval_for(item.id)
  if not a and self.answers and self.answers[item.id] then
    a = { answer = self.answers[item.id], params = {} }
  end
  self:set_block(item.id, render.item(item, a, config.options.keys))
end

-- load shows the turns of a resumed thread.
function Chat:load(thread)
  self:_edit(function()
    vim.api.nvim_buf_clear_namespace(self.buf, ns, 0, -1)
    vim.api.nvim_buf_set_lines(self.buf, 1, -1, false, {})
  end)
  self.blocks, self.items, self.dirty = {}, {}, nil
  for _, turn in ipairs(nn(thread.turns) or {}) do
    for _, item in ipairs(nn(turn.items) or {}) do
      self:render_item(item)
    end
    self:_turn_footer(turn)
  end
end

function Chat:_turn_footer(turn)
  local st = nn(turn.status)
  if st == "inProgress" then
    return
  end
  local line = "── turn " .. tostring(st)
  local dur = nn(turn.durationMs)
  if dur then
    line = line .. (" · %.1f s"):format(dur / 1000)
  end
  local err = nn(turn.error)
  if type(err) == "table" and nn(err.message) then
    line = line .. " · " .. err.message
  end
  self:note(line .. " ──")
end

-- on_notification applies one notification about this thread.
function Chat:on_notification(method, p)
  if method == methods.NotifyTurnStarted then
    self.turn_id = p.turn.id
    self.turn_status = "inProgress"
    self.changed = {}
  elseif method == methods.NotifyTurnCompleted then
    self:flush()
    self.turn_status = p.turn.status
    self.last_turn_id = p.turn.id
    self:_turn_footer(p.turn)
    self.turn_id = nil
  elseif method == methods.NotifyItemStarted or method == methods.NotifyItemCompleted then
    local item = p.item
    if item.type == "agentMessage" and method == methods.NotifyItemStarted then
      self:set_block(item.id, split(nn(item.text) or ""))
    elseif item.type == "commandExecution" and method == methods.NotifyItemStarted then
      item._output = ""
      self:render_item(item)
    else
      if method == methods.NotifyItemCompleted then
        self:_drop_approval(item.id)
        item._done = true
      end
      self:render_item(item)
    end
  elseif method == methods.NotifyAgentMessageDelta then
    self:append_text(p.itemId, p.delta)
  elseif method == methods.NotifyReasoningSummaryDelta or method == methods.NotifyReasoningTextDelta then
    local item = self.items and self.items[p.itemId]
    if item then
      local field = method == methods.NotifyReasoningTextDelta and "content" or "summary"
      item[field] = nn(item[field]) or {}
      local i = (p.summaryIndex or p.contentIndex or 0) + 1
      item[field][i] = (item[field][i] or "") .. p.delta
      self:render_item(item)
    end
  elseif method == methods.NotifyCommandOutputDelta then
    local item = self.items and self.items[p.itemId]
    if item then
      item._output = (item._output or "") .. p.delta
      self:render_item(item)
    end
  elseif method == methods.NotifyTurnPlanUpdated then
    self:set_block("plan:" .. p.turnId, render.plan(p))
  elseif method == methods.NotifyTurnDiffUpdated then
    self.diff = p.diff
  elseif method == methods.NotifyServerRequestResolved then
    for _, a in ipairs(self.approvals) do
      if a.id == p.requestId then
        self:_drop_approval(a.item_id)
        break
      end
    end
  elseif method == methods.NotifyError then
    local e = nn(p.error) or {}
    self:note("⚠ " .. (nn(e.message) or "error") .. (p.willRetry and " (retrying)" or ""))
  elseif method == methods.NotifyWarning then
    self:note("⚠ " .. (nn(p.message) or "warning"))
  end
end

function Chat:_drop_approval(item_id)
  for i, a in ipairs(self.approvals) do
    if a.item_id == item_id then
      table.remove(self.approvals, i)
      if a.respond then
        a.respond(nil, { code = -32603, message = "the request was resolved elsewhere" })
      end
      local item = self.items and self.items[item_id]
      if item then
        self:render_item(item)
      end
      return
    end
  end
end

-- add_approval shows a command or file-change approval under its item.
function Chat:add_approval(id, kind, params, respond)
  local a = { id = id, kind = kind, item_id = params.itemId, params = params }
  a.respond = function(result, err)
    a.respond = nil
    return respond(result, err)
  end
  table.insert(self.approvals, a)
  local item = self.items and self.items[params.itemId]
  if not item then
    item = { type = kind == "fileChange" and "fileChange" or "commandExecution", id = params.itemId,
      command = params.command, commandActions = params.commandActions, status = "inProgress" }
  end
  self:render_item(item)
  self.app.changed()
end

-- answer answers the oldest pending approval with decision.
function Chat:answer(decision)
  local a = self.approvals[1]
  if not a or not a.respond then
    vim.notify("apserver: no approval is waiting in this thread", vim.log.levels.INFO)
    return false
  end
  a.respond({ decision = decision })
  a.answer = decision
  self.answers = self.answers or {}
  self.answers[a.item_id] = decision
  local item = self.items and self.items[a.item_id]
  if item then
    self:render_item(item)
  end
  self.app.changed()
  return true
end

function Chat:choose()
  if not self.approvals[1] then
    return
  end
  local choices = { "accept", "acceptForSession", "decline", "cancel" }
  vim.ui.select(choices, { prompt = "apserver: answer the approval" }, function(c)
    if c then
      self:answer(c)
    end
  end)
end

-- open_change_diff shows the pending (or the item under the cursor) file
-- change side by side: before and after buffers with :diffthis.
function Chat:open_change_diff()
  local a
  for _, x in ipairs(self.approvals) do
    if x.kind == "fileChange" then
      a = x
      break
    end
  end
  local item = a and self.items and self.items[a.item_id]
  if not item then
    vim.notify("apserver: no file change is waiting for approval", vim.log.levels.INFO)
    return
  end
  require("apserver.diff").side_by_side(item, self.cwd)
end

function Chat:send_prompt()
  local lines = vim.api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false)
  local text = vim.trim(table.concat(lines, "\n"))
  if text == "" then
    return
  end
  vim.api.nvim_buf_set_lines(self.prompt_buf, 0, -1, false, {})
  self.app.send(self, text)
end

-- M.title is the chat window's status line text: the thread and its state.
function M.title(buf)
  local ok, tid = pcall(vim.api.nvim_buf_get_var, buf, "apserver_thread")
  if not ok then
    return ""
  end
  local app = require("apserver")
  local chat = app.state.chats[tid]
  local s = "apserver " .. tid:sub(1, 13)
  if chat and chat.turn_id then
    s = s .. " · working"
  end
  if chat and #chat.approvals > 0 then
    s = s .. " · approval waiting"
  end
  local auto = app.auto_status(tid)
  if auto ~= "" then
    s = s .. " · " .. auto
  end
  return s
end

M.Chat = Chat
return M
