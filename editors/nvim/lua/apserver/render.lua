-- apserver.render: turns protocol items into the lines the chat buffer
-- shows. Pure functions of the item; no buffers, no client.
local nn = require("apserver.client").nn

local M = {}

local function split(s)
  return vim.split(s or "", "\n", { plain = true })
end

local function indent(lines, prefix, out)
  for _, l in ipairs(lines) do
    table.insert(out, prefix .. l)
  end
  return out
end

-- M.diffstat counts added and deleted lines of one change {kind, diff}.
function M.diffstat(change)
  local kind = nn(change.kind) or {}
  local t = type(kind) == "table" and kind.type or kind
  local lines = split(nn(change.diff) or "")
  if lines[#lines] == "" then
    table.remove(lines)
  end
  if t == "add" then
    return #lines, 0
  elseif t == "delete" then
    return 0, #lines
  end
  local add, del = 0, 0
  for _, l in ipairs(lines) do
    local c = l:sub(1, 1)
    if c == "+" and l:sub(1, 3) ~= "+++" then
      add = add + 1
    elseif c == "-" and l:sub(1, 3) ~= "---" then
      del = del + 1
    end
  end
  return add, del
end

-- M.command_text is what the user would have typed: the command actions,
-- else the command without its "/bin/bash -c '…'" wrapper.
function M.command_text(item)
  local c = nn(item.command) or ""
  local inner = c:match("^%S*sh %-l?c '(.*)'$")
  if inner then
    return (inner:gsub("'\\''", "'"))
  end
  local acts = nn(item.commandActions)
  if c == "" and type(acts) == "table" and #acts > 0 then
    local parts = {}
    for _, a in ipairs(acts) do
      table.insert(parts, nn(a.command) or "")
    end
    return table.concat(parts, " && ")
  end
  return c
end

local status_mark = {
  completed = "✓",
  failed = "✗",
  declined = "⊘ declined",
  inProgress = "…",
}

-- M.item returns the lines of one item; approval (optional) is the pending
-- approval of it.
function M.item(item, approval, keys)
  local t = item.type
  local out = {}
  if t == "userMessage" then
    local texts = {}
    for _, c in ipairs(nn(item.content) or {}) do
      if c.type == "text" then
        table.insert(texts, c.text)
      end
    end
    local lines = split(table.concat(texts, "\n"))
    out[1] = "▶ " .. lines[1]
    for i = 2, #lines do
      out[i] = "  " .. lines[i]
    end
  elseif t == "agentMessage" then
    out = split(nn(item.text) or "")
  elseif t == "reasoning" then
    table.insert(out, "  ┊ reasoning")
    local text = table.concat(nn(item.summary) or {}, "\n")
    if text == "" then
      text = table.concat(nn(item.content) or {}, "\n")
    end
    if text ~= "" then
      indent(split(text), "  ┊ ", out)
    end
  elseif t == "commandExecution" then
    table.insert(out, "$ " .. M.command_text(item))
    local output = nn(item.aggregatedOutput) or item._output or ""
    if output ~= "" then
      local lines = split(output)
      if lines[#lines] == "" then
        table.remove(lines)
      end
      indent(lines, "  │ ", out)
    end
    local st = nn(item.status) or "inProgress"
    local code = nn(item.exitCode)
    local dur = nn(item.durationMs)
    local line
    if st == "inProgress" then
      line = approval and "  ⚠ waiting for approval" or "  … running"
    elseif code ~= nil then
      line = ("  %s exit %d"):format(code == 0 and "✓" or "✗", code)
    else
      line = "  " .. (status_mark[st] or st)
    end
    if dur then
      line = line .. (" · %d ms"):format(dur)
    end
    table.insert(out, line)
  elseif t == "fileChange" then
    local changes = nn(item.changes) or {}
    local ta, td = 0, 0
    local rows = {}
    for _, ch in ipairs(changes) do
      local a, d = M.diffstat(ch)
      ta, td = ta + a, td + d
      local kind = nn(ch.kind) or {}
      local k = type(kind) == "table" and kind.type or kind
      local letter = ({ add = "A", delete = "D", update = "M" })[k] or "M"
      table.insert(rows, ("  %s %s  +%d -%d"):format(letter, ch.path, a, d))
    end
    local st = nn(item.status) or "inProgress"
    local mark = st == "inProgress" and (approval and "⚠ waiting for approval" or "…") or (status_mark[st] or st)
    table.insert(out, ("✎ %d file%s changed  +%d -%d  %s"):format(#changes, #changes == 1 and "" or "s", ta, td, mark))
    vim.list_extend(out, rows)
  elseif t == "dynamicToolCall" then
    local st = nn(item.status) or "inProgress"
    local args = nn(item.arguments)
    local a = type(args) == "table" and (args.path or args.pattern or args.query or "") or ""
    table.insert(out, ("⚙ %s %s %s"):format(nn(item.tool) or "tool", a, status_mark[st] or st))
  elseif t == "plan" then
    indent(split(nn(item.text) or ""), "  ", out)
  elseif t == "contextCompaction" then
    table.insert(out, item._done and "⇣ context compacted" or "⇣ compacting the context…")
  else
    table.insert(out, "· " .. tostring(t))
  end
  if approval then
    keys = keys or {}
    if approval.answer then
      table.insert(out, "  → " .. approval.answer)
    else
      local reason = nn(approval.params.reason)
      if reason then
        table.insert(out, "  ⚠ " .. reason)
      end
      local l = ("  ⚠ approve? [%s]ccept [%s] session [%s]ecline [%s]ancel"):format(
        keys.accept or "a", keys.accept_session or "A", keys.decline or "d", keys.cancel or "c")
      if approval.kind == "fileChange" then
        l = l .. (" [%s]iff"):format(keys.diff or "D")
      end
      table.insert(out, l)
    end
  end
  return out
end

-- M.plan renders turn/plan/updated as a checklist.
function M.plan(params)
  local out = { "☰ plan" }
  local expl = nn(params.explanation)
  if expl and expl ~= "" then
    indent(split(expl), "  ", out)
  end
  for _, s in ipairs(nn(params.plan) or {}) do
    local box = ({ completed = "[x]", inProgress = "[~]" })[s.status] or "[ ]"
    table.insert(out, ("  %s %s"):format(box, s.step))
  end
  return out
end

return M
