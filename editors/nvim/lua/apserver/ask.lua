-- apserver.ask: answers item/tool/requestUserInput with vim.ui.select (a
-- question with options) or vim.ui.input, one question after the other.
local nn = require("apserver.client").nn

local M = {}

-- M.questions asks each question and calls done({id = {answers = {...}}}),
-- or done(nil) when the user dismissed one.
function M.questions(questions, done)
  local answers = {}
  local i = 0
  local function next_q()
    i = i + 1
    local q = questions[i]
    if not q then
      return done(next(answers) and answers or vim.empty_dict())
    end
    local prompt = (nn(q.header) and (q.header .. ": ") or "") .. (nn(q.question) or "")
    local opts = nn(q.options) or {}
    local function got(a)
      if a == nil then
        return done(nil)
      end
      answers[q.id] = { answers = { a } }
      next_q()
    end
    if #opts > 0 then
      local labels = {}
      for _, o in ipairs(opts) do
        table.insert(labels, o.label)
      end
      local other = "Other…"
      if q.isOther then
        table.insert(labels, other)
      end
      vim.ui.select(labels, {
        prompt = prompt,
        format_item = function(l)
          for _, o in ipairs(opts) do
            if o.label == l and nn(o.description) then
              return l .. " — " .. o.description
            end
          end
          return l
        end,
      }, function(choice)
        if choice == other then
          vim.ui.input({ prompt = prompt .. " " }, got)
        else
          got(choice)
        end
      end)
    else
      vim.ui.input({ prompt = prompt .. " " }, got)
    end
  end
  next_q()
end

return M
