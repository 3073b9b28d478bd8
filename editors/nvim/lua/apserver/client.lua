-- apserver.client: the connection to one apserver process, without any UI.
-- It spawns the binary with jobstart, speaks JSON-RPC over JSONL on its
-- stdio, keeps a map of pending requests by id, dispatches notifications
-- and server requests on the main loop (vim.schedule), answers each server
-- request exactly once, hands stderr lines to on_stderr, and restarts the
-- process when it exits without being asked to.
local jsonl = require("apserver.jsonl")
local methods = require("apserver.methods")

local M = {}

-- M.CONNECTION_CLOSED is the error code of a request whose server went away.
M.CONNECTION_CLOSED = -32099

local Client = {}
Client.__index = Client

local function now_ms()
  return vim.loop.now()
end

-- nn turns JSON null (vim.NIL) into nil.
function M.nn(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

-- M.find_binary looks for apserver: the cmd option, then $APSERVER, then
-- PATH. It returns the path and where it came from, or nil and what was tried.
function M.find_binary(cmd)
  local tried = {}
  local function ok(p)
    return p and p ~= "" and vim.fn.executable(p) == 1
  end
  if cmd and cmd ~= "" then
    if ok(cmd) then
      return vim.fn.exepath(cmd) ~= "" and vim.fn.exepath(cmd) or cmd, "option"
    end
    table.insert(tried, "option cmd = " .. cmd .. " (not executable)")
  end
  local env = vim.env.APSERVER
  if env and env ~= "" then
    if ok(env) then
      return env, "$APSERVER"
    end
    table.insert(tried, "$APSERVER = " .. env .. " (not executable)")
  end
  local p = vim.fn.exepath("apserver")
  if p ~= "" then
    return p, "PATH"
  end
  table.insert(tried, "apserver on PATH (not found)")
  return nil, table.concat(tried, "; ")
end

-- M.new makes a client. opts:
--   cmd            binary (looked up with find_binary)
--   args           arguments (default {"serve", "--on-eof", "interrupt"})
--   env, cwd       for the process
--   client_info    {name, version} for initialize
--   capabilities   initialize's capabilities (default {}; {experimentalApi = true} for dynamic tools)
--   on_notification(method, params)
--   on_request(method, params, respond, id)  respond(result) or respond(nil, {code, message})
--   on_stderr(line)
--   on_state(state, message)  "starting" | "ready" | "restarting" | "failed" | "stopped"
--   on_ready(result, restarted)
--   restart        restart after a crash (default true)
--   max_restarts   within restart_window_ms (default 3 within 60000)
--   restart_delay_ms (default 300, doubled per recent crash)
function M.new(opts)
  local self = setmetatable({}, Client)
  self.opts = opts or {}
  self.state = "stopped"
  self.next_id = 1
  self.pending = {}
  self.crashes = {}
  self.job = nil
  return self
end

function Client:_set_state(state, message)
  self.state = state
  if self.opts.on_state then
    self.opts.on_state(state, message)
  end
end

function Client:_write(msg)
  if not self.job then
    return false
  end
  local ok = pcall(vim.fn.chansend, self.job, vim.json.encode(msg) .. "\n")
  return ok
end

-- request sends method with params; cb(err, result) runs on the main loop.
-- err is {code, message, data}.
function Client:request(method, params, cb)
  cb = cb or function() end
  if not self.job or (self.state ~= "ready" and method ~= methods.MethodInitialize) then
    vim.schedule(function()
      cb({ code = M.CONNECTION_CLOSED, message = "apserver is not running (" .. self.state .. ")" })
    end)
    return nil
  end
  local id = self.next_id
  self.next_id = id + 1
  self.pending[id] = { method = method, cb = cb, job = self.job }
  if not self:_write({ id = id, method = method, params = params or vim.empty_dict() }) then
    self.pending[id] = nil
    vim.schedule(function()
      cb({ code = M.CONNECTION_CLOSED, message = "apserver's stdin is closed" })
    end)
  end
  return id
end

-- request_sync waits (processing events) for the answer; for tests and health.
function Client:request_sync(method, params, timeout_ms)
  local done, err, res = false, nil, nil
  self:request(method, params, function(e, r)
    done, err, res = true, e, r
  end)
  if not vim.wait(timeout_ms or 10000, function()
    return done
  end, 10) then
    return nil, { code = -1, message = method .. " timed out" }
  end
  return res, err
end

function Client:notify(method, params)
  return self:_write({ method = method, params = params })
end

function Client:_respond(id, result, err)
  if err then
    self:_write({ id = id, error = { code = err.code or -32603, message = err.message or "error" } })
  else
    self:_write({ id = id, result = result == nil and vim.empty_dict() or result })
  end
end

function Client:_handle(line)
  local ok, msg = pcall(vim.json.decode, line)
  if not ok or type(msg) ~= "table" then
    self:_stderr("apserver sent a line that is not JSON: " .. line:sub(1, 200))
    return
  end
  local id = M.nn(msg.id)
  local method = M.nn(msg.method)
  if method and id ~= nil then
    -- a server request: answered exactly once
    local answered = false
    local job = self.job
    local function respond(result, err)
      if answered then
        return false
      end
      answered = true
      if self.job == job then
        self:_respond(id, result, err)
      end
      return true
    end
    vim.schedule(function()
      if self.opts.on_request then
        local okh, e = pcall(self.opts.on_request, method, M.nn(msg.params) or {}, respond, id)
        if not okh then
          self:_stderr("handler for " .. method .. " failed: " .. tostring(e))
          respond(nil, { code = -32603, message = tostring(e) })
        end
      else
        respond(nil, { code = -32601, message = "Method not found: " .. method })
      end
    end)
  elseif method then
    vim.schedule(function()
      if self.opts.on_notification then
        local okh, e = pcall(self.opts.on_notification, method, M.nn(msg.params) or {})
        if not okh then
          self:_stderr("handler for " .. method .. " failed: " .. tostring(e))
        end
      end
    end)
  elseif id ~= nil then
    local p = self.pending[id]
    if p then
      self.pending[id] = nil
      local err = M.nn(msg.error)
      local result = M.nn(msg.result)
      vim.schedule(function()
        p.cb(err, result)
      end)
    end
  end
end

function Client:_stderr(line)
  if self.opts.on_stderr then
    self.opts.on_stderr(line)
  end
end

function Client:_fail_pending(message)
  local pending = self.pending
  self.pending = {}
  for _, p in pairs(pending) do
    vim.schedule(function()
      p.cb({ code = M.CONNECTION_CLOSED, message = message })
    end)
  end
end

-- start spawns apserver and performs initialize/initialized; cb(err, result).
function Client:start(cb)
  cb = cb or function() end
  if self.job then
    vim.schedule(function()
      cb(nil, self.server_info)
    end)
    return
  end
  local bin, where = M.find_binary(self.opts.cmd)
  if not bin then
    self:_set_state("failed", "apserver not found: " .. where)
    vim.schedule(function()
      cb({ code = -1, message = "apserver not found: " .. where })
    end)
    return
  end
  self.stopping = false
  self:_set_state(self.restarting and "restarting" or "starting")
  local cmd = { bin }
  for _, a in ipairs(self.opts.args or { "serve", "--on-eof", "interrupt" }) do
    table.insert(cmd, a)
  end
  local out = jsonl.new()
  local errd = jsonl.new()
  local job
  local jopts = {
    cwd = self.opts.cwd,
    on_stdout = function(_, data)
      for _, l in ipairs(out:push(data)) do
        self:_handle(l)
      end
    end,
    on_stderr = function(_, data)
      for _, l in ipairs(errd:push(data)) do
        self:_stderr(l)
      end
    end,
    on_exit = function(_, code)
      for _, l in ipairs(out:finish()) do
        self:_handle(l)
      end
      vim.schedule(function()
        self:_exited(job, code)
      end)
    end,
  }
  if self.opts.env then
    jopts.env = self.opts.env
  end
  local ok, j = pcall(vim.fn.jobstart, cmd, jopts)
  if not ok or j <= 0 then
    self:_set_state("failed", "could not start " .. bin .. ": " .. tostring(j))
    vim.schedule(function()
      cb({ code = -1, message = "could not start " .. bin })
    end)
    return
  end
  job = j
  self.job = j
  self.pid = vim.fn.jobpid(j)
  self.bin = bin
  self:request(methods.MethodInitialize, {
    clientInfo = self.opts.client_info or { name = "apserver.nvim", version = "0.1.0" },
    capabilities = self.opts.capabilities or vim.empty_dict(),
  }, function(err, result)
    if err then
      self:_stderr("initialize failed: " .. (err.message or "?"))
      cb(err)
      return
    end
    self:notify(methods.MethodInitialized, vim.empty_dict())
    self.server_info = result
    local restarted = self.restarting
    self.restarting = false
    self:_set_state("ready")
    if self.opts.on_ready then
      self.opts.on_ready(result, restarted)
    end
    cb(nil, result)
  end)
end

function Client:_exited(job, code)
  if self.job ~= job then
    return
  end
  self.job = nil
  self.pid = nil
  self:_fail_pending("apserver exited (code " .. tostring(code) .. ")")
  if self.stopping or self.opts.restart == false then
    self:_set_state("stopped", "apserver stopped")
    return
  end
  local t = now_ms()
  local window = self.opts.restart_window_ms or 60000
  local recent = {}
  for _, c in ipairs(self.crashes) do
    if t - c < window then
      table.insert(recent, c)
    end
  end
  table.insert(recent, t)
  self.crashes = recent
  if #recent > (self.opts.max_restarts or 3) then
    self:_set_state("failed", ("apserver exited (code %d) %d times within %d s; not restarting. :ApserverRestart starts it again."):format(code, #recent, window / 1000))
    return
  end
  local delay = (self.opts.restart_delay_ms or 300) * 2 ^ (#recent - 1)
  self.restarting = true
  self:_set_state("restarting", ("apserver exited (code %d); restarting in %d ms"):format(code, delay))
  vim.defer_fn(function()
    if self.stopping or self.job then
      return
    end
    self:start()
  end, delay)
end

-- stop closes apserver's stdin (with --on-eof interrupt it interrupts running
-- turns and exits), waits up to timeout_ms, then kills it. No restart.
function Client:stop(timeout_ms)
  self.stopping = true
  local job = self.job
  if not job then
    self:_set_state("stopped")
    return
  end
  pcall(vim.fn.chanclose, job, "stdin")
  local r = vim.fn.jobwait({ job }, timeout_ms or 3000)[1]
  if r == -1 then
    vim.fn.jobstop(job)
    vim.fn.jobwait({ job }, 1000)
  end
  self.job = nil
  self.pid = nil
  self:_fail_pending("apserver was stopped")
  self:_set_state("stopped")
end

-- restart stops the process (no crash counted) and starts it again.
function Client:restart(cb)
  self:stop()
  self.crashes = {}
  self.restarting = true
  self:start(cb)
end

M.Client = Client
return M
