-- apserver.health: :checkhealth apserver. Works with vim.health (0.10+)
-- and the older require("health") (0.7–0.9).
local M = {}

local function reporter()
  local h = vim.health or require("health")
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
    info = h.info or h.report_info,
  }
end

-- M.features lists which newer Neovim APIs are present and which fallback is used.
function M.features()
  return {
    { "vim.system", vim.system ~= nil, "vim.fn.jobstart" },
    { "vim.uv", vim.uv ~= nil, "vim.loop" },
    { "vim.health", vim.health ~= nil and vim.health.start ~= nil, "require('health')" },
    { "vim.filetype.match", vim.filetype ~= nil and vim.filetype.match ~= nil, "no filetype in diff views" },
    { "vim.json", vim.json ~= nil, "none (required)" },
  }
end

function M.check()
  local r = reporter()
  local config = require("apserver.config")
  local client = require("apserver.client")
  r.start("apserver: Neovim")
  local v = vim.version()
  local vs = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.7") == 1 then
    r.ok("Neovim " .. vs)
  else
    r.error("Neovim " .. vs .. " is too old; 0.7 or later is needed")
  end
  for _, f in ipairs(M.features()) do
    if f[2] then
      r.ok(f[1] .. " is available and used")
    else
      r.info(f[1] .. " is missing; using " .. f[3])
    end
  end

  r.start("apserver: binary")
  local bin, where = client.find_binary(config.options.cmd)
  if not bin then
    r.error("apserver not found: " .. where, { "set cmd in require('apserver').setup{}, or $APSERVER, or put apserver on PATH" })
    return
  end
  r.ok(("found %s (from %s)"):format(bin, where))
  local out = vim.fn.system({ bin, "version" })
  if vim.v.shell_error == 0 then
    r.ok("version: " .. vim.trim(out))
  else
    r.error("`" .. bin .. " version` failed: " .. vim.trim(out))
  end

  r.start("apserver: handshake")
  local o = config.options
  local c = client.new({
    cmd = bin,
    args = vim.list_extend(vim.deepcopy(o.args), o.extra_args or {}),
    env = o.env,
    restart = false,
  })
  local done, err, res = false, nil, nil
  c:start(function(e, x)
    done, err, res = true, e, x
  end)
  vim.wait(10000, function()
    return done
  end, 20)
  if not done then
    r.error("initialize did not answer within 10 s")
  elseif err then
    r.error("initialize failed: " .. (err.message or "?"))
  else
    r.ok(("initialize answered: %s"):format(client.nn(res.userAgent) or "?"))
  end
  c:stop(2000)
end

return M
