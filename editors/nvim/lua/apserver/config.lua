-- apserver.config: the options and their defaults (see :help apserver-setup).
local M = {}

M.defaults = {
  cmd = nil, -- apserver binary; nil: $APSERVER, then PATH
  args = { "serve", "--on-eof", "interrupt" }, -- arguments; closing Neovim then exits apserver at once
  extra_args = {}, -- appended to args, e.g. { "--model", "gpt-4.1" }
  env = nil, -- extra environment for apserver (a table), nil: Neovim's
  cwd = nil, -- workspace of new threads; nil: the current directory
  approval_policy = nil, -- "untrusted" | "on-request" | "never"; nil: apserver's default
  layout = "vsplit", -- chat window: "vsplit" | "split" | "float" | "tab"
  width = 0.4, -- vsplit/float width (fraction of the editor or columns)
  height = 0.4, -- split/float height
  prompt_height = 4, -- lines of the prompt window under the chat
  restart = true, -- restart apserver after a crash (3 times within a minute)
  restart_delay_ms = 300, -- first delay before a restart, doubled per recent crash
  flush_ms = 30, -- streamed text is drawn at most this often
  keys = { -- in the chat buffer
    accept = "a",
    accept_session = "A",
    decline = "d",
    cancel = "c",
    choose = "<CR>", -- vim.ui.select over the four answers
    diff = "D", -- side-by-side diff of a pending file change
    interrupt = "<C-c>",
  },
  auto = { budgets = { turns = 30, tokens = 2000000, timeMs = 1800000 }, approvals = "policy" },
  runs = {}, -- run/start defaults: base_branch, autonomy, trust ({ planning = "manual", … }); unset: apserver's
  blueprint_foldlevel = 2, -- folds deeper than this are closed in the blueprint tree
  blueprint_paths_file = nil, -- where the documents of ingested blueprints are remembered; nil: stdpath("data")
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  return M.options
end

return M
