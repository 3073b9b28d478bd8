-- apserver.blueprint: blueprints (docs/blueprints.md) in Neovim.
-- :ApserverIngest {file} ingests a specification, its progress in the
-- status line (blueprint/progress); :ApserverBlueprint shows the plan tree
-- in a buffer folded by depth, each node with its status and done/total,
-- <CR> to the node's heading in the document, t for the node's tasks
-- (blueprint/node/tasks). blueprint/updated keeps the tree live.
local config = require("apserver.config")
local methods = require("apserver.methods")
local client_mod = require("apserver.client")
local buffers = require("apserver.buffers")
local nn = client_mod.nn

local M = {}

-- M.trees: by blueprint id {blueprint, nodes, by_id, tasks (by node id)};
-- M.ingests: ingestions by blueprint id {status, done, total, nodes,
-- error}; M.paths: the document of each blueprint ingested here (the
-- protocol does not carry it). Owned by the main loop.
M.trees = {}
M.ingests = {}
M.paths = {}
M.bufs = {}

local notify, call, redraw_status = buffers.notify, buffers.call, buffers.redraw_status

-- the documents' paths survive a restart of Neovim in a small JSON file
local function paths_file()
  return config.options.blueprint_paths_file or (vim.fn.stdpath("data") .. "/apserver-blueprints.json")
end

local function load_paths()
  if M._paths_loaded then
    return
  end
  M._paths_loaded = true
  local ok, lines = pcall(vim.fn.readfile, paths_file())
  if ok and #lines > 0 then
    local okd, t = pcall(vim.json.decode, table.concat(lines, "\n"))
    if okd and type(t) == "table" then
      M.paths = vim.tbl_extend("keep", M.paths, t)
    end
  end
end

local function save_path(id, path)
  load_paths()
  M.paths[id] = path
  local f = paths_file()
  vim.fn.mkdir(vim.fn.fnamemodify(f, ":h"), "p")
  pcall(vim.fn.writefile, { vim.json.encode(M.paths) }, f)
end

-- ingestion -------------------------------------------------------------

-- M.ingest starts ingesting file; cb(result) once apserver took it.
function M.ingest(file, cb)
  if not file or vim.trim(file) == "" then
    notify(":ApserverIngest needs a file", vim.log.levels.WARN)
    return
  end
  local path = vim.fn.fnamemodify(vim.fn.expand(file), ":p")
  local o = config.options
  call(methods.MethodBlueprintIngest, { cwd = o.cwd or (vim.uv or vim.loop).cwd(), path = path }, function(res)
    if not res then
      return
    end
    local id = res.blueprint.id
    save_path(id, path)
    local v = res.version or {}
    M.ingests[id] = { status = v.status, done = v.chunksDone or 0, total = v.chunksTotal or 0, nodes = v.nodes or 0, title = res.blueprint.title }
    redraw_status()
    notify(("ingesting %s: %d chunks"):format(vim.fn.fnamemodify(path, ":t"), v.chunksTotal or 0))
    if cb then
      cb(res)
    end
  end)
end

-- M.status is the status line part: ingestions in flight, with chunks done.
function M.status()
  local parts = {}
  for _, g in pairs(M.ingests) do
    if g.status == "ingesting" then
      table.insert(parts, ("ingest %d/%d"):format(g.done or 0, g.total or 0))
    end
  end
  table.sort(parts)
  return table.concat(parts, " ")
end

-- the tree ----------------------------------------------------------------

local ICON = { planned = "○", in_progress = "◐", blocked = "⊘", done = "●" }

-- M.progress counts, for every node, the leaves under it (itself when it
-- has none) and how many are done.
function M.progress(nodes)
  local kids, by = {}, {}
  for _, n in ipairs(nodes) do
    by[n.id] = n
    local p = nn(n.parentId)
    if p then
      kids[p] = (kids[p] or 0) + 1
    end
  end
  local out = {}
  for _, n in ipairs(nodes) do
    out[n.id] = out[n.id] or { done = 0, total = 0 }
  end
  for _, n in ipairs(nodes) do
    if not kids[n.id] then
      local id = n.id
      local done = n.status == "done" and 1 or 0
      while id do
        local pr = out[id]
        if pr then
          pr.total = pr.total + 1
          pr.done = pr.done + done
        end
        id = by[id] and nn(by[id].parentId)
      end
    end
  end
  return out
end

-- M.render returns the tree buffer's lines and the node (or task) on each.
function M.render(tree)
  local bp = tree.blueprint or {}
  local pr = bp.primary or {}
  local lines, at = {}, {}
  table.insert(lines, ("Blueprint %s (%s, v%s) · %d nodes"):format(bp.title or "?", bp.id or "?", tostring(pr.number or "?"), #tree.nodes))
  table.insert(lines, "keys: <CR> source  t tasks  s start building  za fold  gr refresh  q close")
  local did = M.manager and M.manager[bp.id]
  if did then
    table.insert(lines, did)
  end
  local prog = M.progress(tree.nodes)
  for _, n in ipairs(tree.nodes) do
    local p = prog[n.id] or { done = 0, total = 0 }
    local l = ("%s%s %s  %s  %d/%d"):format(string.rep("  ", n.depth or 0), ICON[n.status] or "?", n.kind, n.title, p.done, p.total)
    if nn(n.priority) and n.priority ~= "" then
      l = l .. "  !" .. n.priority
    end
    table.insert(lines, l)
    at[#lines] = { node = n }
    for _, t in ipairs(tree.tasks[n.id] or {}) do
      table.insert(lines, ("%s• %s  [%s] %s%s"):format(string.rep("  ", (n.depth or 0) + 1), t.title, t.status or "planned", t.kind or "", (nn(t.risk) and t.risk ~= "") and (" risk " .. t.risk) or ""))
      at[#lines] = { node = n, task = t }
    end
  end
  return lines, at
end

function M.draw(id)
  local b = M.bufs[id]
  local tree = M.trees[id]
  if not (b and vim.api.nvim_buf_is_valid(b) and tree) then
    return
  end
  local lines, at = M.render(tree)
  M.at = M.at or {}
  M.at[b] = at
  buffers.set_lines(b, lines)
end

local function schedule_draw(id)
  if M.bufs[id] then
    buffers.schedule("blueprint:" .. id, function()
      M.draw(id)
    end)
  end
end

-- M.read reads every node of blueprint id (pages of blueprint/read);
-- cb(tree) when done.
function M.read(id, cb)
  local nodes = {}
  local function page(cursor)
    local params = { blueprintId = id, limit = 500 }
    if cursor then
      params.cursor = cursor
    end
    call(methods.MethodBlueprintRead, params, function(res)
      if not res then
        return
      end
      vim.list_extend(nodes, res.nodes or {})
      local nc = nn(res.nextCursor)
      if nc and nc ~= "" then
        return page(nc)
      end
      local old = M.trees[id]
      local tree = { blueprint = res.blueprint, nodes = nodes, by_id = {}, tasks = old and old.tasks or {} }
      for _, n in ipairs(nodes) do
        tree.by_id[n.id] = n
      end
      M.trees[id] = tree
      cb(tree)
    end)
  end
  page(nil)
end

local function at_cursor()
  local b = vim.api.nvim_get_current_buf()
  local at = M.at and M.at[b] or {}
  return at[vim.api.nvim_win_get_cursor(0)[1]], vim.b[b].apserver_blueprint
end

-- M.goto_source opens the document at the node's heading (or the task's
-- excerpt).
function M.goto_source()
  local e, id = at_cursor()
  if not e then
    return
  end
  load_paths()
  local path = M.paths[id]
  local function go(p)
    if not p or p == "" then
      return
    end
    save_path(id, vim.fn.fnamemodify(p, ":p"))
    local offset = e.node.start or 0
    if e.task and type(e.task.excerpt) == "table" and e.task.excerpt.start then
      offset = e.task.excerpt.start
    end
    local tree_win = vim.api.nvim_get_current_win()
    vim.cmd("wincmd p")
    if vim.api.nvim_get_current_win() == tree_win then
      vim.cmd("vsplit")
    end
    vim.cmd("edit " .. vim.fn.fnameescape(p))
    vim.cmd("goto " .. (offset + 1))
    pcall(vim.cmd, "normal! zv")
  end
  if path then
    return go(path)
  end
  vim.ui.input({ prompt = "apserver: the document of this blueprint: ", completion = "file" }, go)
end

-- M.tasks asks for the tasks of the node under the cursor and shows them under it.
function M.tasks()
  local e, id = at_cursor()
  if not e then
    return
  end
  local node = e.node
  notify("asking for the tasks of " .. node.title .. "…")
  call(methods.MethodBlueprintNodeTasks, { blueprintId = id, nodeId = node.id }, function(res)
    if not res then
      return
    end
    local tree = M.trees[id]
    if tree then
      tree.tasks[node.id] = res.tasks or {}
      M.draw(id)
    end
    notify(("%d tasks for %s"):format(#(res.tasks or {}), node.title))
  end)
end

-- building ------------------------------------------------------------------

-- M.phase_of is the phase node holding node (node itself when a phase, the
-- outermost ancestor when no phase is above it).
function M.phase_of(tree, node)
  local n = node
  while n do
    if n.kind == "phase" then
      return n
    end
    local p = nn(n.parentId)
    if not (p and tree.by_id[p]) then
      return n
    end
    n = tree.by_id[p]
  end
end

-- M.start_choices lists what `s` offers for node under the project's
-- settings st: a run of the node's tasks (a node below a phase), the
-- manager building its phase (in each mode when the manager is off, else
-- in its mode, resumed when paused), and cancel. Each choice is {label,
-- action}; action is {run = true} or {mode = m} or nil (cancel).
function M.start_choices(tree, node, st)
  local phase = M.phase_of(tree, node)
  local out = {}
  if node.kind ~= "phase" then
    table.insert(out, { ("a run of the tasks of %s %q, now"):format(node.kind, node.title), { run = true } })
  end
  local mode = nn(st.mode) or "off"
  if mode == "off" then
    for _, m in ipairs({ "semi_auto", "full_auto", "suggest" }) do
      table.insert(out, { ("the manager builds phase %q in mode %s"):format(phase.title, m), { mode = m, phase = phase } })
    end
  else
    table.insert(out, { ("the manager builds phase %q (mode %s%s)"):format(phase.title, mode, st.paused and ", resumed" or ""), { phase = phase } })
  end
  table.insert(out, { "cancel" })
  return out
end

local function project_cwd(tree)
  local bp = tree.blueprint or {}
  local cwd = nn(bp.cwd)
  if cwd and cwd ~= "" then
    return cwd
  end
  return buffers.cwd()
end

-- M.build applies a choice of M.start_choices for node of blueprint id:
-- a run of the node (its buffer opens), or the project's settings (this
-- blueprint, the phase, the mode, not paused) and a tick; what the manager
-- did is said and shown in the tree. cb(result of run/start or the tick).
function M.build(id, node, action, cb)
  local tree = M.trees[id]
  local cwd = project_cwd(tree)
  local function done(res)
    if cb then
      cb(res)
    end
  end
  if action.run then
    call(methods.MethodRunStart, { cwd = cwd, blueprint = { blueprintId = id, nodeId = node.id } }, function(res)
      if not res then
        return done(nil)
      end
      local runs = require("apserver.runs")
      runs.put(res.run)
      M.manager = M.manager or {}
      M.manager[id] = ("started run %s for %s %q"):format(res.run.id, node.kind, node.title)
      M.draw(id)
      runs.open(res.run.id)
      done(res)
    end)
    return
  end
  local p = { cwd = cwd, blueprintId = id, phase = action.phase.id, paused = false }
  if action.mode then
    p.mode = action.mode
  end
  call(methods.MethodProjectSettingsUpdate, p, function(res)
    if not res then
      return done(nil)
    end
    local project = require("apserver.project")
    project.watched[cwd] = true
    project.watched[buffers.cwd()] = true
    project.tick(cwd, function(t)
      if t then
        M.manager = M.manager or {}
        M.manager[id] = project.describe_tick(t)
        M.draw(id)
      end
      done(t)
    end)
  end)
end

-- M.start_building is `s`: asks what to start for the node under the
-- cursor (M.start_choices), then does it (M.build).
function M.start_building()
  local e, id = at_cursor()
  if not e then
    return
  end
  local tree = M.trees[id]
  local node = e.node
  call(methods.MethodProjectSettingsRead, { cwd = project_cwd(tree) }, function(res)
    if not res then
      return
    end
    local choices = M.start_choices(tree, node, res.settings or {})
    local labels = {}
    for _, c in ipairs(choices) do
      table.insert(labels, c[1])
    end
    vim.ui.select(labels, { prompt = ("apserver: start building %s %q?"):format(node.kind, node.title) }, function(_, idx)
      local c = idx and choices[idx]
      if c and c[2] then
        M.build(id, node, c[2])
      end
    end)
  end)
end

local function open_buf(id)
  local b = M.bufs[id]
  if not (b and vim.api.nvim_buf_is_valid(b)) then
    b = buffers.scratch("apserver://blueprint/" .. id, "apserver-blueprint", { apserver_blueprint = id }, {
      { "<CR>", M.goto_source, "open the document at the node" },
      { "t", M.tasks, "the node's tasks" },
      { "s", M.start_building, "start building the phase or node" },
      { "gr", function()
        M.read(id, function()
          M.draw(id)
        end)
      end, "read the tree again" },
    })
    M.bufs[id] = b
  end
  buffers.show(b, "topleft vsplit")
  vim.wo.wrap = false
  vim.wo.number = false
  vim.bo[b].shiftwidth = 2
  vim.wo.foldmethod = "indent"
  vim.wo.foldlevel = config.options.blueprint_foldlevel or 2
  vim.wo.foldenable = true
  return b
end

-- M.open shows blueprint id, or the newest blueprint of the workspace;
-- cb(buf) once drawn.
function M.open(id, cb)
  local function show(bid)
    local b = open_buf(bid)
    M.read(bid, function()
      M.draw(bid)
      if cb then
        cb(b)
      end
    end)
  end
  if id and id ~= "" then
    return show(id)
  end
  call(methods.MethodBlueprintList, { cwd = config.options.cwd or (vim.uv or vim.loop).cwd() }, function(res)
    if not res then
      return
    end
    local best
    for _, bp in ipairs(res.data or {}) do
      if not best or (bp.primary.createdAt or 0) > (best.primary.createdAt or 0) then
        best = bp
      end
    end
    if not best then
      notify("no blueprint in this workspace; :ApserverIngest {file} makes one", vim.log.levels.WARN)
      return
    end
    show(best.id)
  end)
end

-- M.on_notification takes blueprint/* notifications (init.lua passes them).
function M.on_notification(method, p)
  if method == methods.NotifyBlueprintProgress then
    local g = M.ingests[p.blueprintId] or {}
    g.status, g.done, g.total, g.nodes, g.error = p.status, p.chunksDone, p.chunksTotal, p.nodes, nn(p.error)
    M.ingests[p.blueprintId] = g
    redraw_status()
    if p.status == "ready" then
      notify(("blueprint %s ready: %d nodes; :ApserverBlueprint shows it"):format(p.blueprintId, p.nodes or 0))
      if M.bufs[p.blueprintId] then
        M.read(p.blueprintId, function()
          M.draw(p.blueprintId)
        end)
      end
    elseif p.status == "failed" or p.status == "cancelled" then
      notify(("ingestion %s: %s"):format(p.status, g.error or ""), vim.log.levels.ERROR)
    end
  elseif method == methods.NotifyBlueprintUpdated then
    local tree = M.trees[p.blueprintId]
    local n = p.node
    if tree and n and tree.by_id[n.id] then
      local old = tree.by_id[n.id]
      for k, v in pairs(n) do
        old[k] = v
      end
      schedule_draw(p.blueprintId)
    elseif tree and n then
      -- a task of a node (nodeId a task id): update it where it is shown
      for _, list in pairs(tree.tasks) do
        for _, t in ipairs(list) do
          if t.id == n.id then
            t.status = n.status
            t.title = n.title or t.title
          end
        end
      end
      schedule_draw(p.blueprintId)
    end
  end
end

return M
