-- apserver.diff: the side-by-side view of a proposed file change, the
-- turn's diff in a buffer, and the quickfix list of changed files.
local nn = require("apserver.client").nn

local M = {}

local function read_lines(path)
  if vim.fn.filereadable(path) == 1 then
    return vim.fn.readfile(path)
  end
  return {}
end

-- M.apply applies the unified-diff hunks of diff to lines (a list) and
-- returns the new lines. Context lines are trusted to match: this is for
-- showing a change, not for writing one.
function M.apply(lines, diff)
  local out = {}
  local src = 1
  local dl = vim.split(diff, "\n", { plain = true })
  local i = 1
  while i <= #dl do
    local l = dl[i]
    local old_start = l:match("^@@ %-(%d+)")
    if old_start then
      old_start = tonumber(old_start)
      if old_start == 0 then
        old_start = 1
      end
      while src < old_start and src <= #lines do
        table.insert(out, lines[src])
        src = src + 1
      end
      i = i + 1
      while i <= #dl and not dl[i]:match("^@@ ") do
        local h = dl[i]
        local c, rest = h:sub(1, 1), h:sub(2)
        if c == " " then
          table.insert(out, rest)
          src = src + 1
        elseif c == "-" then
          src = src + 1
        elseif c == "+" then
          table.insert(out, rest)
        end
        i = i + 1
      end
    else
      i = i + 1
    end
  end
  while src <= #lines do
    table.insert(out, lines[src])
    src = src + 1
  end
  return out
end

local function scratch(name, lines, ft)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  if ft and ft ~= "" then
    vim.bo[buf].filetype = ft
  end
  return buf
end

-- M.before_after returns the before and after lines of one change.
function M.before_after(change, cwd)
  local kind = nn(change.kind) or {}
  local k = type(kind) == "table" and kind.type or kind
  local path = change.path
  if path:sub(1, 1) ~= "/" then
    path = cwd .. "/" .. path
  end
  local diff = nn(change.diff) or ""
  local content = vim.split(diff, "\n", { plain = true })
  if content[#content] == "" then
    table.remove(content)
  end
  if k == "add" then
    return {}, content, path
  elseif k == "delete" then
    return content, {}, path
  end
  local before = read_lines(path)
  return before, M.apply(before, diff), path
end

-- M.side_by_side opens a tab per change of a fileChange item: the file
-- before on the left, after on the right, both under :diffthis. q closes it.
function M.side_by_side(item, cwd)
  for _, change in ipairs(nn(item.changes) or {}) do
    local before, after, path = M.before_after(change, cwd)
    local ft = ""
    if vim.fn.has("nvim-0.8") == 1 then
      ft = vim.filetype.match({ filename = path }) or ""
    end
    vim.cmd("tabnew")
    local left = scratch("apserver-before://" .. path, before, ft)
    vim.api.nvim_win_set_buf(0, left)
    vim.cmd("diffthis")
    vim.cmd("vsplit")
    local right = scratch("apserver-after://" .. path, after, ft)
    vim.api.nvim_win_set_buf(0, right)
    vim.cmd("diffthis")
    for _, b in ipairs({ left, right }) do
      vim.keymap.set("n", "q", "<cmd>tabclose<CR>", { buffer = b, nowait = true })
    end
  end
end

-- M.files lists the files of a git-style diff with the first changed line.
function M.files(diff)
  local out = {}
  local cur
  for _, l in ipairs(vim.split(diff or "", "\n", { plain = true })) do
    local b = l:match("^%+%+%+ b/(.*)$")
    local a = l:match("^%-%-%- a/(.*)$")
    if l:match("^diff %-%-git ") then
      cur = { path = l:match(" b/(.*)$"), lnum = 1, add = 0, del = 0 }
      table.insert(out, cur)
    elseif b and cur then
      cur.path = b
    elseif a and cur and not cur.path then
      cur.path = a
    elseif cur and l:match("^@@ ") and not cur.hunk then
      cur.hunk = true
      cur.lnum = tonumber(l:match("^@@ %-%d+,?%d* %+(%d+)")) or 1
    elseif cur and cur.hunk and l:sub(1, 1) == "+" then
      cur.add = cur.add + 1
    elseif cur and cur.hunk and l:sub(1, 1) == "-" then
      cur.del = cur.del + 1
    end
  end
  return out
end

-- M.open_turn_diff shows diff in a diff buffer and fills the quickfix list.
function M.open_turn_diff(diff, cwd, title)
  if not diff or diff == "" then
    vim.notify("apserver: the turn changed no files", vim.log.levels.INFO)
    return
  end
  local items = {}
  for _, f in ipairs(M.files(diff)) do
    table.insert(items, {
      filename = cwd .. "/" .. f.path,
      lnum = math.max(f.lnum, 1),
      text = ("+%d -%d"):format(f.add, f.del),
    })
  end
  vim.fn.setqflist({}, " ", { title = title or "apserver: changed files", items = items })
  vim.cmd("tabnew")
  local buf = scratch("apserver-diff://" .. (title or "turn"), vim.split(diff, "\n", { plain = true }), "diff")
  vim.api.nvim_win_set_buf(0, buf)
  vim.keymap.set("n", "q", "<cmd>tabclose<CR>", { buffer = buf, nowait = true })
  return buf
end

return M
