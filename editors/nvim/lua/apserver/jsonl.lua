-- apserver.jsonl: splits the chunks that jobstart's on_stdout delivers into
-- whole lines. jobstart cuts its output anywhere: the first element of a
-- chunk continues the previous chunk's last line, and the last element is
-- the start of a line not finished yet (or "" when the chunk ended in a
-- newline). The unfinished part is kept as a list of pieces and joined once
-- the line ends, so a 1 MB line that arrives in many chunks costs one join.
local M = {}

local Decoder = {}
Decoder.__index = Decoder

function M.new()
  return setmetatable({ parts = {} }, Decoder)
end

local function strip_cr(l)
  if l:sub(-1) == "\r" then
    return l:sub(1, -2)
  end
  return l
end

-- push takes one on_stdout data list and returns the lines it completed
-- (empty lines dropped).
function Decoder:push(data)
  local out = {}
  local n = #data
  if n == 0 then
    return out
  end
  if n == 1 then
    -- no newline in this chunk: the line goes on
    if data[1] ~= "" then
      table.insert(self.parts, data[1])
    end
    return out
  end
  table.insert(self.parts, data[1])
  local first = strip_cr(table.concat(self.parts))
  self.parts = {}
  if first ~= "" then
    table.insert(out, first)
  end
  for i = 2, n - 1 do
    local l = strip_cr(data[i])
    if l ~= "" then
      table.insert(out, l)
    end
  end
  if data[n] ~= "" then
    self.parts = { data[n] }
  end
  return out
end

-- pending is the unfinished line so far.
function Decoder:pending()
  return table.concat(self.parts)
end

-- finish returns the unterminated last line, if any, at EOF.
function Decoder:finish()
  local l = strip_cr(table.concat(self.parts))
  self.parts = {}
  if l == "" then
    return {}
  end
  return { l }
end

return M
