-- The plugin inside Neovim against the real apserver binary and its
-- scripted fake model. Judged from outside where it matters: the buffer's
-- text, files in the workspace, the process id.
local h = require("helpers")
local jsonl = require("apserver.jsonl")

describe("jsonl decoder", function()
  it("carries a partial last line over, also a 1 MB line cut in many chunks", function()
    local d = jsonl.new()
    assert.are.same({ '{"a":1}' }, d:push({ '{"a":1}', '{"b"' }))
    assert.are.equal('{"b"', d:pending())
    assert.are.same({ '{"b":2}', '{"c":3}' }, d:push({ ':2}', "", '{"c":3}\r', "" }))
    local big = '{"t":"' .. string.rep("y", 1024 * 1024) .. '"}'
    local got = {}
    local pos = 1
    while pos <= #big do
      local piece = big:sub(pos, pos + 65535)
      pos = pos + 65536
      vim.list_extend(got, d:push({ piece }))
    end
    vim.list_extend(got, d:push({ "", "" }))
    assert.are.equal(1, #got)
    assert.are.equal(#big, #got[1])
    assert.are.equal(1024 * 1024, #vim.json.decode(got[1]).t)
    assert.are.same({ "tail" }, (function()
      d:push({ "tail" })
      return d:finish()
    end)())
  end)
end)

describe("chat against apserver", function()
  local app = require("apserver")
  before_each(function()
    h.setup()
  end)

  it("streams the answer into the buffer and keeps the user's cursor", function()
    local chat = h.new_chat()
    local w = chat:window()
    h.send(chat, "say something")
    h.wait(h.contains(chat, "hello there"), 15000, "the first words")
    vim.api.nvim_win_set_cursor(w, { 1, 0 })
    h.wait(h.contains(chat, "in several small pieces"), 15000, "the whole answer")
    h.wait(h.contains(chat, "── turn completed"), 15000, "turn completed")
    assert.are.same({ 1, 0 }, vim.api.nvim_win_get_cursor(w))
    assert.truthy(chat:text():find("▶ say something", 1, true))
  end)

  it("folds reasoning", function()
    local chat = h.new_chat()
    h.send(chat, "think about it")
    h.wait(h.contains(chat, "decided."), 15000, "the answer")
    local lines = vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)
    local row
    for i, l in ipairs(lines) do
      if l:find("first I consider", 1, true) then
        row = i
      end
    end
    assert.truthy(row, chat:text())
    vim.api.nvim_set_current_win(chat:window())
    assert.is_true(vim.fn.foldclosed(row) ~= -1, "the reasoning is folded")
  end)

  it("answers a command approval with one key in the chat buffer", function()
    local ws = h.setup({ approval_policy = "untrusted" })
    local chat = h.new_chat()
    h.send(chat, "run tests")
    h.wait(h.contains(chat, "approve? [a]ccept"), 15000, "the approval in the buffer")
    assert.are.equal(0, vim.fn.filereadable(ws .. "/note.txt"), "nothing ran before the answer")
    h.keys(chat, "a")
    h.wait(h.contains(chat, "All done."), 15000, "the end of the turn")
    assert.are.equal(1, vim.fn.filereadable(ws .. "/note.txt"), "the approved command ran")
    local t = chat:text()
    assert.truthy(t:find("$ touch note.txt && echo made it", 1, true), t)
    assert.truthy(t:find("│ made it", 1, true), t)
    assert.truthy(t:find("✓ exit 0", 1, true), t)
  end)

  it("declines a command with d: it never runs and the turn goes on", function()
    local ws = h.setup({ approval_policy = "untrusted" })
    local chat = h.new_chat()
    h.send(chat, "run tests")
    h.wait(h.contains(chat, "approve? [a]ccept"), 15000, "the approval")
    h.keys(chat, "d")
    h.wait(h.contains(chat, "── turn completed"), 15000, "the end of the turn")
    assert.truthy(chat:text():find("⊘ declined", 1, true), chat:text())
    assert.are.equal(0, vim.fn.filereadable(ws .. "/note.txt"), "the declined command did not run")
  end)

  it("shows a file change side by side, applies it on accept, lists it, and undoes it", function()
    local ws = h.setup({ approval_policy = "untrusted" })
    vim.fn.writefile({ "hello world" }, ws .. "/greet.txt")
    local chat = h.new_chat()
    h.send(chat, "edit the greeting")
    h.wait(h.contains(chat, "[D]iff"), 15000, "the file-change approval")
    local t = chat:text()
    assert.truthy(t:find("✎ 1 file changed  +1 -1", 1, true), t)
    assert.truthy(t:find("[x] change the greeting", 1, true), t)
    assert.truthy(t:find("[~] tell the user", 1, true), t)
    h.keys(chat, "D")
    local wins = vim.api.nvim_tabpage_list_wins(0)
    assert.are.equal(2, #wins)
    local seen = {}
    for _, w in ipairs(wins) do
      assert.is_true(vim.wo[w].diff)
      seen[vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)[1]] = true
    end
    assert.is_true(seen["hello world"] and seen["goodbye world"], vim.inspect(seen))
    vim.cmd("tabclose")
    assert.are.same({ "hello world" }, vim.fn.readfile(ws .. "/greet.txt"))
    h.keys(chat, "a")
    h.wait(h.contains(chat, "── turn completed"), 15000, "the end of the turn")
    assert.truthy(chat:text():find("Edited.", 1, true))
    assert.are.same({ "goodbye world" }, vim.fn.readfile(ws .. "/greet.txt"))
    h.wait(function()
      return chat.diff
    end, 5000, "the turn diff")
    local dbuf = app.diff()
    assert.truthy(table.concat(vim.api.nvim_buf_get_lines(dbuf, 0, -1, false), "\n"):find("+goodbye world", 1, true))
    local qf = vim.fn.getqflist()
    assert.are.equal(1, #qf)
    assert.are.equal(ws .. "/greet.txt", vim.fn.fnamemodify(vim.fn.bufname(qf[1].bufnr), ":p"))
    vim.cmd("tabclose")
    vim.api.nvim_set_current_win(chat:window())
    vim.cmd("ApserverUndo")
    h.wait(h.contains(chat, "undone"), 15000, "the undo")
    assert.are.same({ "hello world" }, vim.fn.readfile(ws .. "/greet.txt"))
  end)

  it("interrupts a streaming turn", function()
    local chat = h.new_chat()
    h.send(chat, "slow please")
    h.wait(h.contains(chat, "tick tick tick"), 15000, "streaming")
    vim.api.nvim_set_current_win(chat:window())
    vim.cmd("ApserverInterrupt")
    h.wait(h.contains(chat, "── turn interrupted"), 5000, "the interrupted turn")
    local _, ticks = chat:text():gsub("tick ", "")
    assert.is_true(ticks < 2000, "the stream was cut short: " .. ticks .. " of 2000")
  end)

  it("compacts the context with :ApserverCompact and goes on from the summary", function()
    local chat = h.new_chat()
    h.send(chat, "long story")
    h.wait(function()
      return chat.turn_id == nil and chat:text():find("a long story", 1, true) ~= nil
    end, 15000, "the long answer")
    vim.api.nvim_set_current_win(chat:window())
    vim.cmd("ApserverCompact")
    h.wait(h.contains(chat, "⇣ context compacted"), 15000, "the compaction")
    h.wait(function()
      return chat.turn_id == nil and chat.turn_status == "completed"
    end, 15000, "the compaction turn")
    -- the chat keeps what was compacted; the next turn goes on as usual
    assert.truthy(chat:text():find("a long story", 1, true))
    h.send(chat, "and then?")
    h.wait(h.contains(chat, "hello there, this answer"), 15000, "the next answer")
  end)

  it("steers a running turn with :ApserverSteer", function()
    local chat = h.new_chat()
    h.send(chat, "slow please")
    h.wait(h.contains(chat, "tick tick"), 15000, "streaming")
    vim.api.nvim_set_current_win(chat:window())
    vim.cmd("ApserverSteer say it differently")
    -- the model now answers the steered input (the default rule)
    h.wait(h.contains(chat, "in several small pieces"), 15000, "the steered answer")
    h.wait(h.contains(chat, "── turn completed"), 15000, "the end of the turn")
  end)

  it("asks the agent's question with vim.ui.select and sends the answer", function()
    -- --trace: apserver logs every message it reads to stderr, which the
    -- plugin keeps in its log; the answer is judged there, as apserver read it
    local app_ = require("apserver")
    app_.stop()
    app_.state.client = nil
    h.setup({ extra_args = { "--data-dir", h.data, "--base-url", h.url, "--model", "scripted", "--trace" } })
    local chat = h.new_chat()
    local asked
    local orig = vim.ui.select
    vim.ui.select = function(items, opts, on_choice)
      asked = { items = items, prompt = opts.prompt, first = opts.format_item(items[1]) }
      on_choice("blue")
    end
    h.send(chat, "ask me something")
    h.wait(h.contains(chat, "thanks for answering"), 15000, "the answer after the question")
    vim.ui.select = orig
    assert.are.same({ "red", "blue" }, { asked.items[1], asked.items[2] })
    assert.are.equal("Color: Which color?", asked.prompt)
    assert.are.equal("red — warm", asked.first)
    local log = table.concat(app.state.log, "\n"):gsub('\\"', '"')
    assert.truthy(log:find('"answers":{"color":{"answers":["blue"]}}', 1, true), log:sub(-3000))
    app_.stop()
    app_.state.client = nil
  end)

  it("resumes a thread picked in :ApserverThreads with its history", function()
    local first = h.new_chat()
    h.send(first, "say the thing to remember")
    h.wait(h.contains(first, "── turn completed"), 15000, "a turn")
    -- forget the chat, as after restarting Neovim
    app.state.chats[first.thread_id] = nil
    app.state.current = nil
    vim.cmd("silent! tabonly | silent! only")
    local orig = vim.ui.select
    local offered
    vim.ui.select = function(items, opts, on_choice)
      offered = #items
      for _, t in ipairs(items) do
        if t.id == first.thread_id then
          return on_choice(t)
        end
      end
      on_choice(nil)
    end
    vim.cmd("ApserverThreads")
    h.wait(function()
      return app.state.chats[first.thread_id]
    end, 15000, "the resumed chat")
    vim.ui.select = orig
    assert.is_true(offered >= 1)
    local chat = app.state.chats[first.thread_id]
    assert.are_not.equal(first, chat)
    h.wait(h.contains(chat, "▶ say the thing to remember"), 5000, "the history")
    assert.truthy(chat:text():find("in several small pieces", 1, true), chat:text())
  end)

  it("takes a 1 MB agent message in one line", function()
    local chat = h.new_chat()
    local completed
    app.on_notification_hook = function(method, p)
      if method == "item/completed" and p.item.type == "agentMessage" then
        completed = #p.item.text
      end
    end
    h.send(chat, "something big")
    h.wait(h.contains(chat, "── turn completed"), 30000, "the end of the turn")
    app.on_notification_hook = nil
    assert.are.equal(1024 * 1024, completed, "the item/completed line (over 1 MB) was read whole")
    local longest = 0
    for _, l in ipairs(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
      longest = math.max(longest, #l)
    end
    assert.are.equal(1024 * 1024, longest)
  end)

  it("runs full auto to a stop and shows it in the status line", function()
    local chat = h.new_chat()
    vim.api.nvim_set_current_win(chat:window())
    app.auto("keep greeting", { turns = 2 })
    h.wait(function()
      local r = app.state.runs[chat.thread_id]
      return r and r.state == "stopped"
    end, 30000, "the run to stop")
    local s = app.statusline()
    assert.truthy(s:find("auto:stopped", 1, true), s)
    assert.truthy(s:find("turns 2/2", 1, true), s)
    assert.truthy(chat:text():find("⟳ full auto: stop", 1, true), chat:text())
  end)

  it("restarts apserver after it is killed and resumes the chat", function()
    local chat = h.new_chat()
    h.send(chat, "say something")
    h.wait(h.contains(chat, "── turn completed"), 15000, "a first turn")
    local c = app.state.client
    local pid = c.pid
    assert.truthy(pid)
    vim.loop.kill(pid, 9)
    h.wait(function()
      return c.state == "ready" and c.pid and c.pid ~= pid
    end, 15000, "a new apserver")
    h.wait(h.contains(chat, "apserver restarted; thread resumed"), 15000, "the resumed chat")
    assert.truthy(chat:text():find("▶ say something", 1, true), "the history is back")
    h.send(chat, "say more")
    h.wait(h.contains(chat, "▶ say more"), 15000, "the new turn")
    h.wait(function()
      local _, n = chat:text():gsub("── turn completed", "")
      return n >= 2
    end, 15000, "the new turn's end")
  end)

  it("opens the chat in a float, and :ApserverLog shows apserver's stderr", function()
    h.setup({ layout = "float" })
    local chat = h.new_chat()
    assert.are.equal("editor", vim.api.nvim_win_get_config(chat:window()).relative)
    local pw = vim.fn.win_findbuf(chat.prompt_buf)[1]
    assert.are.equal("editor", vim.api.nvim_win_get_config(pw).relative, "the prompt floats under the chat")
    h.send(chat, "say something")
    h.wait(h.contains(chat, "── turn completed"), 15000, "the turn")
    vim.cmd("ApserverLog")
    assert.truthy(vim.api.nvim_buf_get_name(0):find("apserver://log", 1, true))
    assert.are.same(app.state.log, vim.api.nvim_buf_get_lines(0, 0, -1, false))
    h.setup()
  end)

  it("drops an approval whose apserver died, and shows the turn interrupted after the restart", function()
    local ws = h.setup({ approval_policy = "untrusted" })
    local chat = h.new_chat()
    h.send(chat, "run tests")
    h.wait(h.contains(chat, "approve? [a]ccept"), 15000, "the approval")
    local c = app.state.client
    local pid = c.pid
    vim.loop.kill(pid, 9)
    h.wait(h.contains(chat, "apserver restarted; thread resumed"), 15000, "the resumed chat")
    assert.falsy(chat:text():find("approve? [a]ccept", 1, true), chat:text())
    assert.truthy(chat:text():find("── turn interrupted", 1, true), chat:text())
    assert.is_false(chat:answer("accept"))
    assert.are.equal(0, vim.fn.filereadable(ws .. "/note.txt"))
  end)

  it("passes :checkhealth apserver", function()
    vim.cmd("silent! tabonly | silent! only")
    vim.cmd("checkhealth apserver")
    local t = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    assert.truthy(t:find("initialize answered", 1, true), t)
    assert.truthy(t:find("version: apserver", 1, true), t)
    assert.falsy(t:find("ERROR", 1, true), t)
  end)
end)
