-- apserver.plan_yaml: a run's plan as the YAML the user edits, and back.
-- encode writes the tasks of run/plan/update (id, title, kind, risk,
-- estimate, dependencies, description, acceptance); decode reads that
-- subset of YAML (block mappings and lists, flow lists, plain, "double"
-- and 'single' quoted scalars, | block scalars) and says on which line it
-- stopped understanding. Pure: no Neovim state.
local M = {}

local function plain_ok(s)
  if s == "" then
    return false
  end
  if s:find("^[%s%-%?:,%[%]{}#&%*!|>'\"%%@`]") or s:find("%s$") then
    return false
  end
  if s:find(": ", 1, true) or s:find(" #", 1, true) or s:find(":$") or s:find("\n", 1, true) or s:find("\t", 1, true) then
    return false
  end
  local l = s:lower()
  if l == "true" or l == "false" or l == "null" or l == "~" or l == "yes" or l == "no" or tonumber(s) then
    return false
  end
  return true
end

-- M.scalar is s as a YAML scalar: plain when safe, else double-quoted
-- (JSON's escapes are YAML's).
function M.scalar(s)
  s = tostring(s or "")
  if plain_ok(s) then
    return s
  end
  return vim.json.encode(s)
end

local function list_block(out, indent, key, items)
  items = items or {}
  if #items == 0 then
    table.insert(out, indent .. key .. ": []")
    return
  end
  table.insert(out, indent .. key .. ":")
  for _, it in ipairs(items) do
    table.insert(out, indent .. "  - " .. M.scalar(it))
  end
end

-- M.encode returns the lines of the plan's tasks, headed by comments that
-- say how to edit it.
function M.encode(tasks, header)
  local out = {}
  for _, h in ipairs(header or {}) do
    table.insert(out, "# " .. h)
  end
  table.insert(out, "tasks:")
  for _, t in ipairs(tasks or {}) do
    table.insert(out, "  - id: " .. M.scalar(t.id))
    table.insert(out, "    title: " .. M.scalar(t.title))
    table.insert(out, "    kind: " .. M.scalar(t.kind or "file_edit"))
    table.insert(out, "    risk: " .. M.scalar(t.risk or "low"))
    if t.estimate and t.estimate ~= "" and t.estimate ~= vim.NIL then
      table.insert(out, "    estimate: " .. M.scalar(t.estimate))
    end
    local deps = {}
    for _, d in ipairs(type(t.dependencies) == "table" and t.dependencies or {}) do
      table.insert(deps, M.scalar(d))
    end
    table.insert(out, "    dependencies: [" .. table.concat(deps, ", ") .. "]")
    local desc = t.description
    if type(desc) == "string" and desc ~= "" then
      if desc:find("\n", 1, true) then
        table.insert(out, "    description: |")
        for _, l in ipairs(vim.split(desc:gsub("\n$", ""), "\n", { plain = true })) do
          table.insert(out, l == "" and "" or ("      " .. l))
        end
      else
        table.insert(out, "    description: " .. M.scalar(desc))
      end
    end
    local acc = type(t.acceptance) == "table" and t.acceptance or {}
    table.insert(out, "    acceptance:")
    list_block(out, "      ", "criteria", type(acc.criteria) == "table" and acc.criteria or {})
    list_block(out, "      ", "checks", type(acc.checks) == "table" and acc.checks or {})
    list_block(out, "      ", "files", type(acc.files) == "table" and acc.files or {})
  end
  return out
end

-- parsing -------------------------------------------------------------

local function perr(n, msg)
  error({ line = n, message = msg }, 0)
end

local function parse_scalar(s, n)
  s = vim.trim(s)
  if s:sub(1, 1) == '"' then
    local ok, v = pcall(vim.json.decode, s)
    if not ok or type(v) ~= "string" then
      perr(n, "a double-quoted string that does not end where it should: " .. s)
    end
    return v
  elseif s:sub(1, 1) == "'" then
    if not s:find("'$") or #s < 2 then
      perr(n, "a single-quoted string that does not end: " .. s)
    end
    return (s:sub(2, -2):gsub("''", "'"))
  end
  -- a comment after a plain scalar
  local c = s:find(" #", 1, true)
  if c then
    s = vim.trim(s:sub(1, c - 1))
  end
  return s
end

local function parse_flow(s, n)
  s = vim.trim(s)
  if s:sub(1, 1) ~= "[" or s:sub(-1) ~= "]" then
    perr(n, "a list must be [a, b] or one '- item' per line: " .. s)
  end
  local body = s:sub(2, -2)
  local items, i = {}, 1
  while i <= #body do
    local ch = body:sub(i, i)
    if ch:match("%s") or ch == "," then
      i = i + 1
    elseif ch == '"' then
      local j = i + 1
      while j <= #body do
        local cj = body:sub(j, j)
        if cj == "\\" then
          j = j + 2
        elseif cj == '"' then
          break
        else
          j = j + 1
        end
      end
      table.insert(items, parse_scalar(body:sub(i, j), n))
      i = j + 1
    else
      local j = body:find(",", i, true) or (#body + 1)
      table.insert(items, parse_scalar(body:sub(i, j - 1), n))
      i = j + 1
    end
  end
  return items
end

local function indent_of(l)
  return #l:match("^( *)")
end

local TASK_KEYS = { id = true, title = true, kind = true, risk = true, estimate = true, dependencies = true, description = true, acceptance = true }
local ACC_KEYS = { criteria = true, checks = true, files = true }

-- M.decode reads lines written as M.encode writes them (and hand edits of
-- them) into a list of tasks for run/plan/update. On failure it returns
-- nil and "line N: what is wrong".
function M.decode(lines)
  local ok, res = pcall(function()
    local tasks = {}
    local n = 0
    local total = #lines
    local function peek()
      -- the next line that is not blank or a comment
      local k = n + 1
      while k <= total do
        local l = lines[k]
        if not (l:match("^%s*$") or l:match("^%s*#")) then
          return k, l
        end
        k = k + 1
      end
      return nil
    end
    -- a value after "key:" on line k at indent ind: inline, a | block or a block list
    local function value(rest, ind, k, want_list)
      rest = vim.trim(rest)
      if rest == "|" or rest == "|-" or rest == "|+" then
        local buf, min = {}, nil
        while n + 1 <= total do
          local l = lines[n + 1]
          if l:match("^%s*$") then
            table.insert(buf, "")
            n = n + 1
          elseif indent_of(l) > ind then
            min = math.min(min or 1e9, indent_of(l))
            table.insert(buf, l)
            n = n + 1
          else
            break
          end
        end
        while #buf > 0 and buf[#buf] == "" do
          table.remove(buf)
        end
        for i, l in ipairs(buf) do
          buf[i] = l:sub((min or 0) + 1)
        end
        return table.concat(buf, "\n")
      end
      if rest == "" then
        if not want_list then
          return ""
        end
        local items = {}
        while true do
          local nk, nl = peek()
          if not nk or indent_of(nl) < ind or not nl:match("^%s*%-%s") then
            break
          end
          n = nk
          table.insert(items, parse_scalar(nl:match("^%s*%-%s*(.*)$"), nk))
        end
        return items
      end
      if want_list then
        return parse_flow(rest, k)
      end
      return parse_scalar(rest, k)
    end

    local k, l = peek()
    if not k then
      perr(1, "no tasks: the file must start with 'tasks:'")
    end
    if vim.trim(l) ~= "tasks:" then
      perr(k, "expected 'tasks:', got: " .. l)
    end
    n = k
    local cur
    while true do
      k, l = peek()
      if not k then
        break
      end
      n = k
      local ind = indent_of(l)
      local item = l:match("^%s*%- (.*)$")
      if item then
        cur = { dependencies = {} }
        table.insert(tasks, cur)
        ind = ind + 2
        l = string.rep(" ", ind) .. item
      end
      if not cur then
        perr(k, "a task starts with '- id: …': " .. l)
      end
      local key, rest = l:match("^%s*([%w_]+):%s*(.-)%s*$")
      if not key then
        perr(k, "expected 'key: value': " .. l)
      end
      if not TASK_KEYS[key] then
        perr(k, "unknown field '" .. key .. "' (a task has id, title, kind, risk, estimate, dependencies, description, acceptance)")
      end
      if key == "acceptance" then
        if vim.trim(rest) ~= "" then
          perr(k, "acceptance holds criteria, checks and files, one per line below it")
        end
        local acc = {}
        while true do
          local ak, al = peek()
          if not ak or indent_of(al) <= ind then
            break
          end
          n = ak
          local akey, arest = al:match("^%s*([%w_]+):%s*(.-)%s*$")
          if not akey or not ACC_KEYS[akey] then
            perr(ak, "acceptance has criteria, checks and files: " .. al)
          end
          acc[akey] = value(arest, indent_of(al), ak, true)
        end
        cur.acceptance = acc
      elseif key == "dependencies" then
        cur.dependencies = value(rest, ind, k, true)
      else
        cur[key] = value(rest, ind, k, false)
      end
    end
    for i, t in ipairs(tasks) do
      if not t.id or t.id == "" then
        error({ line = nil, message = ("task %d has no id"):format(i) }, 0)
      end
    end
    return tasks
  end)
  if not ok then
    if type(res) == "table" then
      return nil, (res.line and ("line " .. res.line .. ": ") or "") .. res.message
    end
    return nil, tostring(res)
  end
  return res
end

-- M.wire turns decoded tasks into run/plan/update's tasks: empty lists are
-- left out (an empty Lua table would be sent as a JSON object).
function M.wire(tasks)
  local out = {}
  for _, t in ipairs(tasks) do
    local w = { id = t.id, title = t.title or "", kind = t.kind or "file_edit", risk = t.risk or "", description = t.description or "", estimate = t.estimate or "" }
    if t.dependencies and #t.dependencies > 0 then
      w.dependencies = t.dependencies
    end
    local acc = {}
    for _, k in ipairs({ "criteria", "checks", "files" }) do
      local v = t.acceptance and t.acceptance[k]
      if type(v) == "table" and #v > 0 then
        acc[k] = v
      end
    end
    if next(acc) then
      w.acceptance = acc
    end
    table.insert(out, w)
  end
  return out
end

return M
