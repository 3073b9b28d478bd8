-- Runs the busted suite inside Neovim:
--   nvim --headless -u NONE -i NONE -c "luafile tests/run.lua"
-- Debian's lua-busted is found on the Lua 5.1 paths (Neovim's LuaJIT loads
-- its modules and C libraries). Prints each test, then "N passed, N failed",
-- and quits Neovim with status 1 when anything failed.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
package.path = table.concat({
  "/usr/share/lua/5.1/?.lua",
  "/usr/share/lua/5.1/?/init.lua",
  "/usr/local/share/lua/5.1/?.lua",
  "/usr/local/share/lua/5.1/?/init.lua",
  root .. "/tests/?.lua",
  package.path,
}, ";")
package.cpath = table.concat({
  "/usr/lib/x86_64-linux-gnu/lua/5.1/?.so",
  "/usr/lib/aarch64-linux-gnu/lua/5.1/?.so",
  "/usr/local/lib/lua/5.1/?.so",
  package.cpath,
}, ";")
vim.opt.runtimepath:prepend(root)
vim.cmd("runtime plugin/apserver.lua")

local code
-- headless Neovim prints messages without a newline; keep the output readable
vim.notify = function(msg)
  io.stdout:write("      (notify) " .. tostring(msg) .. "\n")
end
local compat = require("busted.compatibility")
compat.exit = function(c)
  code = c
  error("busted-exit", 0)
end
local pattern = vim.env.TEST_FILTER
_G.arg = { [0] = "busted", "--no-auto-insulate", "--output=" .. root .. "/tests/summary.lua", "--pattern=_spec%.lua$", root .. "/tests" }
if pattern and pattern ~= "" then
  table.insert(_G.arg, 1, "--filter=" .. pattern)
end
local ok, err = pcall(require("busted.runner"), { standalone = false })
if ok then
  code = code or 0
elseif err ~= "busted-exit" then
  io.stdout:write("runner error: " .. tostring(err) .. "\n")
  code = 1
end
local tok, terr = pcall(function()
  require("helpers").teardown()
end)
if not tok then
  io.stdout:write("teardown: " .. tostring(terr) .. "\n")
end
io.stdout:flush()
if code == 0 then
  vim.cmd("qall!")
else
  vim.cmd("cquit 1")
end
