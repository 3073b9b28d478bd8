-- apserver.buffers: what the run, blueprint and project buffers share
-- (apserver.runs, apserver.blueprint, apserver.project): a request whose
-- error is shown, a scratch buffer with its keys, its window, its lines
-- rewritten with the cursors kept, and redraws coalesced so that a stream
-- of notifications never takes the editor's time from typing.
local config = require("apserver.config")

local M = {}

function M.notify(msg, level)
  vim.notify("apserver: " .. msg, level or vim.log.levels.INFO)
end

-- M.with_client calls fn(client) once apserver is up; a failure to start
-- is shown.
function M.with_client(fn)
  require("apserver").client(function(err, c)
    if err then
      M.notify(err.message or "could not start apserver", vim.log.levels.ERROR)
      return
    end
    fn(c)
  end)
end

-- M.call sends a request: cb(result), or cb(nil, err) after showing the
-- error. on_result(result) runs first when given (a module's own cache).
function M.call(method, params, cb, on_result)
  M.with_client(function(c)
    c:request(method, params, function(err, res)
      if err then
        M.notify(method .. ": " .. (err.message or "?"), vim.log.levels.ERROR)
        if cb then
          cb(nil, err)
        end
        return
      end
      if on_result then
        on_result(res)
      end
      if cb then
        cb(res)
      end
    end)
  end)
end

-- M.map maps lhs in buffer b's normal mode.
function M.map(b, lhs, fn, desc)
  vim.keymap.set("n", lhs, fn, { buffer = b, nowait = true, silent = true, desc = desc })
end

-- M.scratch makes a scratch buffer named name with filetype ft; vars are
-- its buffer variables, maps {lhs, fn, desc} its keys (q closes it).
function M.scratch(name, ft, vars, maps)
  local b = vim.api.nvim_create_buf(false, true)
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "hide"
  vim.bo[b].swapfile = false
  vim.bo[b].filetype = ft
  pcall(vim.api.nvim_buf_set_name, b, name)
  for k, v in pairs(vars or {}) do
    vim.api.nvim_buf_set_var(b, k, v)
  end
  for _, m in ipairs(maps or {}) do
    M.map(b, m[1], m[2], m[3])
  end
  M.map(b, "q", "<cmd>close<CR>", "close")
  return b
end

-- M.show focuses buffer b's window, or opens one with split (an Ex
-- command such as "botright vsplit"); true when a window was opened.
function M.show(b, split)
  local w = vim.fn.win_findbuf(b)[1]
  if w then
    vim.api.nvim_set_current_win(w)
    return false
  end
  vim.cmd(split)
  vim.api.nvim_win_set_buf(0, b)
  vim.wo.wrap = false
  vim.wo.number = false
  return true
end

-- M.set_lines replaces buffer b's lines, keeping each window's cursor.
function M.set_lines(b, lines)
  local cursors = {}
  for _, w in ipairs(vim.fn.win_findbuf(b)) do
    cursors[w] = vim.api.nvim_win_get_cursor(w)
  end
  vim.bo[b].modifiable = true
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  for w, c in pairs(cursors) do
    pcall(vim.api.nvim_win_set_cursor, w, { math.min(c[1], #lines), c[2] })
  end
end

-- M.schedule runs fn after flush_ms, once however often it is asked for
-- the same key meanwhile.
local pending = {}
function M.schedule(key, fn)
  if pending[key] then
    return
  end
  pending[key] = true
  vim.defer_fn(function()
    pending[key] = nil
    fn()
  end, config.options.flush_ms or 30)
end

-- M.line_at is the entry of at (line number → entry) under the cursor.
function M.line_at(at)
  return (at or {})[vim.api.nvim_win_get_cursor(0)[1]]
end

function M.redraw_status()
  pcall(vim.cmd, "redrawstatus!")
end

-- M.cwd is the workspace the plugin works in.
function M.cwd()
  return config.options.cwd or (vim.uv or vim.loop).cwd()
end

return M
