-- The editor's own tools, offered to the agent as Codex's dynamic tools
-- (experimental API; docs/mcp.md "Editor-provided tools"): `diagnostics`,
-- the problems vim.diagnostic holds for a file or for every loaded buffer.
-- init.lua declares M.specs on thread/start and answers item/tool/call
-- with M.call.
local M = {}

-- The most diagnostics one answer lists.
M.max = 200

M.specs = {
  {
    type = "function",
    name = "diagnostics",
    description = "The editor's diagnostics (LSP and linters, from vim.diagnostic) for one file, "
      .. "or for every open buffer when path is omitted: path:line:column: severity: message (source).",
    inputSchema = {
      type = "object",
      properties = {
        path = { type = "string", description = "File path, absolute or relative to the workspace. Omit for every open buffer." },
      },
      additionalProperties = false,
    },
  },
}

local severity_names = { "error", "warning", "information", "hint" }

local function answer(text, success)
  return { contentItems = { { type = "inputText", text = text } }, success = success ~= false }
end

-- root is the directory the agent's paths are relative to: the plugin's
-- cwd option (the thread's cwd), else Neovim's.
local function root()
  local ok, config = pcall(require, "apserver.config")
  local cwd = ok and config.options and config.options.cwd or vim.loop.cwd()
  return (cwd:gsub("/+$", ""))
end

local function relative(path)
  local r = root() .. "/"
  if path:sub(1, #r) == r then
    return path:sub(#r + 1)
  end
  return path
end

local function absolute(path)
  if path:sub(1, 1) == "/" then
    return path
  end
  return root() .. "/" .. path:gsub("^%./", "")
end

-- M.format lists diagnostics ({path, lnum, col (0-based), severity (1-4),
-- message, source}) one a line, errors first, at most M.max.
function M.format(items, what)
  if #items == 0 then
    return "No problems in " .. what .. "."
  end
  table.sort(items, function(a, b)
    if a.severity ~= b.severity then
      return a.severity < b.severity
    end
    if a.path ~= b.path then
      return a.path < b.path
    end
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    return a.col < b.col
  end)
  local lines = {}
  for i, d in ipairs(items) do
    if i > M.max then
      lines[#lines + 1] = ("... and %d more."):format(#items - M.max)
      break
    end
    local msg = (d.message or ""):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
    lines[#lines + 1] = ("%s:%d:%d: %s: %s%s"):format(
      relative(d.path),
      d.lnum + 1,
      d.col + 1,
      severity_names[d.severity] or "error",
      msg,
      d.source and d.source ~= "" and (" (" .. d.source .. ")") or ""
    )
  end
  return table.concat(lines, "\n")
end

-- collect turns vim.diagnostic.get(bufnr) into format's items.
local function collect(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local name = vim.api.nvim_buf_get_name(d.bufnr)
    if name ~= "" then
      out[#out + 1] = { path = name, lnum = d.lnum, col = d.col, severity = d.severity, message = d.message, source = d.source }
    end
  end
  return out
end

-- M.call answers item/tool/call's params: {contentItems, success}. Bad
-- arguments and unknown tools are an unsuccessful answer saying why.
function M.call(params)
  local args = params.arguments
  if args == nil or args == vim.NIL then
    args = {}
  end
  if type(args) ~= "table" or (vim.islist or vim.tbl_islist)(args) and #args > 0 then
    return answer("arguments must be an object", false)
  end
  local ns = params.namespace
  if ns ~= nil and ns ~= vim.NIL and ns ~= "" then
    return answer(("unknown tool %s/%s"):format(ns, tostring(params.tool)), false)
  end
  if params.tool ~= "diagnostics" then
    return answer("unknown tool " .. tostring(params.tool), false)
  end
  local path = args.path
  if path == nil or path == vim.NIL or path == "" then
    return answer(M.format(collect(nil), "the open buffers"))
  end
  if type(path) ~= "string" then
    return answer("path must be a string", false)
  end
  local abs = absolute(path)
  local bufnr
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == abs then
      bufnr = b
    end
  end
  if not bufnr then
    return answer(("No problems in %s (it is not open in Neovim, so nothing has checked it)."):format(relative(abs)))
  end
  return answer(M.format(collect(bufnr), relative(abs)))
end

return M
