-- apserver.nvim: registers the commands; everything else loads on first use.
if vim.g.loaded_apserver then
  return
end
vim.g.loaded_apserver = 1

local function app()
  return require("apserver")
end

-- a clean shutdown when Neovim exits, if apserver was ever started
vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("apserver_leave", { clear = true }),
  callback = function()
    if package.loaded["apserver"] then
      require("apserver").stop()
    end
  end,
})

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts or {})
end

cmd("ApserverNew", function() app().new() end, { desc = "apserver: new thread and chat" })
cmd("ApserverThreads", function() app().threads() end, { desc = "apserver: pick a thread and resume it" })
cmd("ApserverInterrupt", function() app().interrupt() end, { desc = "apserver: interrupt the running turn" })
cmd("ApserverSteer", function(o) app().steer(o.args) end, { nargs = "+", desc = "apserver: steer the running turn" })
cmd("ApserverCompact", function() app().compact() end, { desc = "apserver: compact the thread's context now" })
cmd("ApserverUndo", function(o) app().undo(o.bang) end, { bang = true, desc = "apserver: revert the last turn (files too)" })
cmd("ApserverLog", function() app().open_log() end, { desc = "apserver: show apserver's stderr" })
cmd("ApserverDiff", function() app().diff() end, { desc = "apserver: the turn's diff and its files in quickfix" })
cmd("ApserverApprove", function(o) app().approve(o.args) end, {
  nargs = "?",
  complete = function() return { "accept", "acceptForSession", "decline", "cancel" } end,
  desc = "apserver: answer the waiting approval",
})
cmd("ApserverAuto", function(o) app().auto(o.args) end, { nargs = "*", desc = "apserver: full auto toward an objective" })
cmd("ApserverAutoPause", function() app().auto_pause() end, {})
cmd("ApserverAutoResume", function() app().auto_resume() end, {})
cmd("ApserverAutoStop", function() app().auto_stop() end, {})
cmd("ApserverRestart", function() app().restart() end, { desc = "apserver: restart the server" })
cmd("ApserverRun", function(o) require("apserver.runs").command(o) end, {
  nargs = "*",
  range = true,
  desc = "apserver: start a run toward a request (or the selected lines)",
})
cmd("ApserverRuns", function() require("apserver.runs").list() end, { desc = "apserver: the runs; <CR> opens one" })
cmd("ApserverBlueprint", function(o) require("apserver.blueprint").open(o.args) end, { nargs = "?", desc = "apserver: the blueprint's plan tree" })
cmd("ApserverIngest", function(o) require("apserver.blueprint").ingest(o.args) end, {
  nargs = 1,
  complete = "file",
  desc = "apserver: ingest a specification into a blueprint",
})
cmd("ApserverProject", function(o) require("apserver.project").open(o.args) end, {
  nargs = "?",
  complete = "dir",
  desc = "apserver: the project's status, its manager and its decisions",
})
