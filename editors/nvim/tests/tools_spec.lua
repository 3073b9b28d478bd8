-- The editor's dynamic tools (lua/apserver/tools.lua): diagnostics from
-- vim.diagnostic, unit by unit, then called by the agent through the real
-- apserver (thread/start declares it, item/tool/call asks Neovim).
local h = require("helpers")
local tools = require("apserver.tools")

local ns = vim.api.nvim_create_namespace("apserver-tools-test")

-- file_with_problems opens path (absolute) in a buffer and gives it diagnostics.
local function file_with_problems(path, diags)
  vim.fn.writefile({ "package main", "", "func main() { foo() }" }, path)
  local buf = vim.fn.bufadd(path)
  vim.fn.bufload(buf)
  vim.diagnostic.set(ns, buf, diags)
  return buf
end

local function text(r)
  return r.contentItems[1].text
end

describe("dynamic tools", function()
  local ws
  before_each(function()
    ws = h.setup()
  end)

  it("declares diagnostics as a function tool with an object schema", function()
    assert.are.equal(1, #tools.specs)
    assert.are.equal("function", tools.specs[1].type)
    assert.are.equal("diagnostics", tools.specs[1].name)
    assert.are.equal("object", tools.specs[1].inputSchema.type)
  end)

  it("lists a file's diagnostics, errors first, 1-based, relative to the workspace", function()
    local E, W = vim.diagnostic.severity.ERROR, vim.diagnostic.severity.WARN
    file_with_problems(ws .. "/main.go", {
      { lnum = 0, col = 0, severity = W, message = "package  comment\nmissing", source = "revive" },
      { lnum = 2, col = 14, severity = E, message = "undefined: foo", source = "gopls" },
    })
    file_with_problems(ws .. "/other.go", { { lnum = 0, col = 0, severity = E, message = "elsewhere" } })
    local r = tools.call({ tool = "diagnostics", arguments = { path = "main.go" } })
    assert.is_true(r.success)
    assert.are.equal("main.go:3:15: error: undefined: foo (gopls)\nmain.go:1:1: warning: package comment missing (revive)", text(r))
    local all = text(tools.call({ tool = "diagnostics", arguments = vim.empty_dict() }))
    assert.truthy(all:find("other.go:1:1: error: elsewhere", 1, true), all)
    assert.truthy(all:find("main.go:3:15", 1, true), all)
    local closed = tools.call({ tool = "diagnostics", arguments = { path = "closed.go" } })
    assert.is_true(closed.success)
    assert.truthy(text(closed):find("not open in Neovim", 1, true), text(closed))
  end)

  it("answers bad arguments and unknown tools unsuccessfully, saying why", function()
    for _, c in ipairs({
      { { tool = "diagnostics", arguments = { path = 3 } }, "path must be a string" },
      { { tool = "diagnostics", arguments = "x" }, "arguments must be an object" },
      { { tool = "open_file", arguments = {} }, "unknown tool open_file" },
      { { tool = "diagnostics", namespace = "ed", arguments = {} }, "unknown tool ed/diagnostics" },
    }) do
      local r = tools.call(c[1])
      assert.is_false(r.success, c[2])
      assert.truthy(text(r):find(c[2], 1, true), text(r))
    end
  end)

  it("is called by the agent through apserver and its answer is the item's result", function()
    -- A fake model of this test's own: it calls diagnostics, then answers.
    local dir = h.tempdir("toolmodel")
    vim.fn.writefile({ vim.json.encode({ rules = {
      { match = "check the problems", steps = {
        { tool_calls = { { name = "diagnostics", arguments = { path = "main.go" } } } },
        { text = "Checked the problems." },
      } },
    } }) }, dir .. "/script.json")
    local url
    local job = vim.fn.jobstart({ h.bin(), "fake-model", "--script", dir .. "/script.json" }, {
      on_stdout = function(_, data)
        if not url and data[1] and data[1]:match("^http") then
          url = vim.trim(data[1])
        end
      end,
    })
    h.wait(function()
      return url
    end, 15000, "the tool model's URL")
    local app = require("apserver")
    app.stop() -- a client of this test's model
    app.state.client = nil
    ws = h.setup({ extra_args = { "--data-dir", h.tempdir("data"), "--base-url", url, "--model", "scripted" } })
    file_with_problems(ws .. "/main.go", { { lnum = 2, col = 14, severity = vim.diagnostic.severity.ERROR, message = "undefined: foo", source = "gopls" } })
    local chat = h.new_chat()
    h.send(chat, "check the problems")
    h.wait(h.contains(chat, "Checked the problems."), 15000, "the end of the turn")
    assert.truthy(chat:text():find("⚙ diagnostics main.go", 1, true), chat:text())
    local item
    require("apserver").state.client:request("thread/read", { threadId = chat.thread_id, includeTurns = true }, function(err, res)
      assert.is_nil(err)
      for _, t in ipairs(res.thread.turns) do
        for _, it in ipairs(t.items) do
          if it.type == "dynamicToolCall" then
            item = it
          end
        end
      end
    end)
    h.wait(function()
      return item
    end, 15000, "thread/read")
    vim.fn.jobstop(job)
    app.stop() -- the next test gets a client of the shared model
    app.state.client = nil
    h.setup()
    assert.is_true(item.success, vim.inspect(item))
    assert.are.equal("main.go:3:15: error: undefined: foo (gopls)", item.contentItems[1].text)
  end)
end)
