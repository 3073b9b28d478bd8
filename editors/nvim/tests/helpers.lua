-- Test helpers: the real apserver binary, its scripted fake model, a data
-- directory and a workspace per run, and waiting on conditions with
-- vim.wait (which runs Neovim's event loop: job output, vim.schedule).
local M = {}

local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
M.root = root
M.repo = vim.fn.fnamemodify(root, ":h:h")

-- M.bin is the apserver under test: $APSERVER_TEST_BIN, else the repo's bin/apserver.
function M.bin()
  local b = vim.env.APSERVER_TEST_BIN
  if b and b ~= "" then
    return b
  end
  return M.repo .. "/bin/apserver"
end

-- M.SCRIPT is what the fake model answers: the rule whose match occurs in
-- the last user message.
M.SCRIPT = {
  rules = {
    -- runs (apserver.runs): the validator, the planner, the implementers.
    -- First: the planner's and validator's prompts quote the request and
    -- the task, whose words may be another rule's.
    { match = "Review task", steps = { { text = '{"pass":true,"findings":"the diff does what the task says"}' } } },
    { match = "feedback: one task only", steps = { { text = '{"summary":"smaller","tasks":[{"id":"n1","title":"N1-task write one.txt","description":"Write one.txt.","kind":"file_create","dependencies":[],"risk":"low","acceptance":{"criteria":["one.txt exists"],"checks":[],"files":["one.txt"]},"estimate":"1m"}],"clarification":null}' } } },
    { match = "The user answered: blue", steps = { { text = '{"summary":"blue it is","tasks":[{"id":"n1","title":"N1-task write one.txt","description":"Write one.txt.","kind":"file_create","dependencies":[],"risk":"low","acceptance":{"criteria":["one.txt exists"],"checks":[],"files":["one.txt"]},"estimate":"1m"}],"clarification":null}' } } },
    { match = "small tasks: ask first", steps = { { text = '{"summary":"","tasks":[],"clarification":{"question":"Which colour?","context":"the greeting","options":["red","blue"]}}' } } },
    { match = "small tasks: gate", steps = { { text = '{"summary":"risky","tasks":[{"id":"g1","title":"G1-task write gate.txt","description":"Write gate.txt.","kind":"file_create","dependencies":[],"risk":"high","acceptance":{"criteria":["gate.txt exists"],"checks":[],"files":["gate.txt"]},"estimate":"1m"}],"clarification":null}' } } },
    { match = "small tasks: repair", steps = { { text = '{"summary":"flag","tasks":[{"id":"f1","title":"F1-task write flag.txt","description":"Write flag.txt.","kind":"file_create","dependencies":[],"risk":"low","acceptance":{"criteria":["flag.txt exists"],"checks":[],"files":["flag.txt"]},"estimate":"1m"}],"clarification":null}' } } },
    { match = "Fix: F1-task", steps = { { text = "Fixing.", tool_calls = { { name = "exec_command", arguments = { cmd = "echo flag > flag.txt" } } } }, { text = "The task is complete." } } },
    { match = "F1-task", steps = { { text = "The task is complete." } } },
    { match = "Plan this request", steps = { { text = '{"summary":"two files","tasks":[{"id":"n1","title":"N1-task write one.txt","description":"Write one.txt.","kind":"file_create","dependencies":[],"risk":"low","acceptance":{"criteria":["one.txt exists"],"checks":[],"files":["one.txt"]},"estimate":"1m"},{"id":"n2","title":"N2-task write two.txt","description":"Write two.txt.","kind":"file_create","dependencies":["n1"],"risk":"medium","acceptance":{"criteria":["two.txt exists"],"checks":[],"files":["two.txt"]},"estimate":"1m"}],"clarification":null}' } } },
    { match = "N1-task", steps = { { text = "Working on it.", tool_calls = { { name = "exec_command", arguments = { cmd = "echo one > one.txt" } } } }, { text = "The task is complete." } } },
    { match = "N2-task", steps = { { text = "Working on it.", tool_calls = { { name = "exec_command", arguments = { cmd = "echo two > two.txt" } } } }, { text = "The task is complete." } } },
    { match = "G1-task", steps = { { text = "Working on it.", tool_calls = { { name = "exec_command", arguments = { cmd = "echo gate > gate.txt" } } } }, { text = "The task is complete." } } },
    -- blueprints (apserver.blueprint): the outline of the one chunk of
    -- M.SPEC and the tasks of a node
    { match = "[blueprint chunk 1/1", steps = { { text = vim.json.encode({ nodes = {
      { kind = "phase", heading = "Phase 1: Greetings", title = "Greetings", summary = "", priority = "", risk = "", estimate = "", dependsOn = {} },
      { kind = "epic", heading = "Epic: Say hello", title = "Say hello", summary = "", priority = "", risk = "", estimate = "", dependsOn = {} },
      { kind = "task", heading = "Task: Print hello", title = "Print hello", summary = "", priority = "high", risk = "", estimate = "S", dependsOn = {} },
      { kind = "task", heading = "Task: Print bye", title = "Print bye", summary = "", priority = "", risk = "", estimate = "S", dependsOn = {} },
    }, next = "" }) } } },
    { match = "[blueprint tasks", steps = { { text = vim.json.encode({ tasks = {
      { title = "Write hello.sh", kind = "file_create", criteria = { "it prints hello" }, checks = { "sh hello.sh" }, files = { "hello.sh" }, dependsOn = {}, estimate = "S", risk = "low", excerpt = "The tool MUST print hello." },
    }, next = "" }) } } },
    -- apserver's compaction summary request (its transcript quotes the
    -- other rules' words, so this rule comes first)
    { match = "Compaction request:", steps = { { text = "## Task\nTell a long story.\n## Done\n[completed] The long story." } } },
    { match = "long story", steps = { { text = string.rep("a long story, ", 2000) } } },
    { match = "run tests", steps = {
      { text = "I'll run them.", tool_calls = { { name = "exec_command", arguments = { cmd = "touch note.txt && echo made it" } } } },
      { text = "All done." },
    } },
    { match = "edit the greeting", steps = {
      { text = "Editing.", tool_calls = {
        { name = "update_plan", arguments = { plan = {
          { step = "change the greeting", status = "completed" },
          { step = "tell the user", status = "inProgress" },
        } } },
      } },
      { tool_calls = { { name = "edit_file", arguments = { path = "greet.txt", old_string = "hello", new_string = "goodbye" } } } },
      { text = "Edited." },
    } },
    { match = "slow", steps = { { deltas = 2000, delta_text = "tick ", inter_delta_us = 20000 } } },
    { match = "many", steps = { { deltas = 10000, delta_text = "word ", inter_delta_us = 200 } } },
    { match = "big", steps = { { text = string.rep("x", 1024 * 1024) } } },
    { match = "ask me", steps = {
      { tool_calls = { { name = "request_user_input", arguments = { questions = {
        { id = "color", header = "Color", question = "Which color?", options = { { label = "red", description = "warm" }, { label = "blue" } } },
      } } } } },
      { text = "thanks for answering" },
    } },
    { match = "think", steps = { { reasoning = { "first I consider", "then I decide" }, text = "decided." } } },
  },
  default = { { text = "hello there, this answer is streamed in several small pieces", inter_delta_us = 5000 } },
}

-- M.SPEC is a small specification whose outline the script knows.
M.SPEC = {
  "# Phase 1: Greetings",
  "",
  "## Epic: Say hello",
  "",
  "### Task: Print hello",
  "",
  "The tool MUST print hello.",
  "",
  "### Task: Print bye",
  "",
  "The tool prints bye.",
}

local tmp = {}

function M.tempdir(prefix)
  local d = vim.fn.tempname() .. "-" .. (prefix or "apserver")
  vim.fn.mkdir(d, "p")
  table.insert(tmp, d)
  return d
end

-- M.wait runs the event loop until cond() is true, or fails after ms.
function M.wait(cond, ms, label)
  local ok = vim.wait(ms or 15000, function()
    return cond() and true or false
  end, 10)
  if not ok then
    error("timed out waiting for " .. (label or "a condition"), 2)
  end
end

-- M.fake_model starts `apserver fake-model` once and returns its URL.
function M.fake_model()
  if M.url then
    return M.url
  end
  local dir = M.tempdir("model")
  local file = dir .. "/script.json"
  vim.fn.writefile({ vim.json.encode(M.SCRIPT) }, file)
  local url
  M.model_job = vim.fn.jobstart({ M.bin(), "fake-model", "--script", file }, {
    on_stdout = function(_, data)
      if not url and data[1] and data[1]:match("^http") then
        url = vim.trim(data[1])
      end
    end,
  })
  M.wait(function()
    return url
  end, 15000, "the fake model's URL")
  M.url = url
  return url
end

-- M.setup configures the plugin against the fake model with a fresh data
-- directory and workspace, and returns the workspace.
function M.setup(extra)
  local url = M.fake_model()
  M.data = M.data or M.tempdir("data")
  M.ws = M.tempdir("ws")
  local app = require("apserver")
  local opts = vim.tbl_deep_extend("force", {
    cmd = M.bin(),
    extra_args = { "--data-dir", M.data, "--base-url", url, "--model", "scripted" },
    env = { OPENAI_API_KEY = "test-key" },
    cwd = M.ws,
    restart_delay_ms = 50,
    flush_ms = 10,
  }, extra or {})
  app.setup(opts)
  return M.ws
end

-- M.git_ws makes the workspace a git repository with a first commit (a
-- run branches from one).
function M.git_ws(ws)
  vim.fn.writefile({ "# demo" }, ws .. "/README.md")
  local out = vim.fn.system({ "sh", "-c", "cd '" .. ws .. "' && git init -q -b main && git -c user.name=T -c user.email=t@example.com add -A && git -c user.name=T -c user.email=t@example.com commit -q -m first" })
  assert(vim.v.shell_error == 0, out)
  return ws
end

-- M.new_chat starts a thread and returns its chat.
function M.new_chat()
  vim.cmd("silent! tabonly | silent! only")
  local chat
  require("apserver").new(function(c)
    chat = c
  end)
  M.wait(function()
    return chat
  end, 15000, "the new chat")
  vim.cmd("stopinsert")
  return chat
end

-- M.send types text into the chat's prompt and presses <CR> in normal mode.
function M.send(chat, text)
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { text })
  local w = vim.fn.win_findbuf(chat.prompt_buf)[1]
  vim.api.nvim_set_current_win(w)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<Esc><CR>", true, false, true), "x", false)
end

function M.contains(chat, s)
  return function()
    return chat:text():find(s, 1, true) ~= nil
  end
end

-- M.keys presses keys in the chat window (normal mode), as a user would.
function M.keys(chat, keys)
  local w = chat:window()
  vim.api.nvim_set_current_win(w)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
end

-- Buffers (the run, blueprint and project views): M.buftext is buffer b's
-- text; M.has(b, s) a condition for M.wait that b shows s; M.buf_keys
-- presses keys in b's window as a user would; M.line_of the first line of b
-- holding s.
function M.buftext(b)
  return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
end

function M.has(b, s)
  return function()
    return vim.api.nvim_buf_is_valid(b) and M.buftext(b):find(s, 1, true) ~= nil
  end
end

function M.buf_keys(b, k)
  local w = vim.fn.win_findbuf(b)[1]
  assert(w, "buffer shown")
  vim.api.nvim_set_current_win(w)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "x", false)
end

function M.line_of(b, s)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(b, 0, -1, false)) do
    if l:find(s, 1, true) then
      return i
    end
  end
end

-- M.ingested ingests helpers.SPEC in the workspace and opens its tree;
-- returns the blueprint id and the tree buffer
function M.ingested(ws)
  vim.fn.writefile(M.SPEC, ws .. "/spec.md")
  local bp = require("apserver.blueprint")
  local res
  bp.ingest(ws .. "/spec.md", function(r)
    res = r
  end)
  M.wait(function()
    return res and bp.ingests[res.blueprint.id].status == "ready"
  end, 30000, "the ingestion")
  local b
  bp.open(res.blueprint.id, function(buf)
    b = buf
  end)
  M.wait(function()
    return b and M.buftext(b):find("Print bye", 1, true)
  end, 15000, "the tree")
  return res.blueprint.id, b
end

function M.teardown()
  local app = package.loaded["apserver"]
  if app then
    app.stop()
  end
  if M.model_job then
    vim.fn.jobstop(M.model_job)
  end
  for _, d in ipairs(tmp) do
    vim.fn.delete(d, "rf")
  end
end

return M
