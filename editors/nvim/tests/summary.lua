-- busted output handler: one line per test, then "N passed, N failed".
return function(options)
  local busted = require("busted")
  local handler = require("busted.outputHandlers.base")()
  local function out(s)
    io.stdout:write(s .. "\n")
    io.stdout:flush()
  end
  handler.testEnd = function(element, parent, status)
    local name = handler.getFullName(element)
    if status == "success" then
      out("ok    " .. name)
    elseif status == "pending" then
      out("skip  " .. name)
    end
    return nil, true
  end
  local function failed(element, parent, message, trace)
    out("FAIL  " .. handler.getFullName(element))
    out("      " .. tostring(message):gsub("\n", "\n      "))
    if trace and trace.traceback then
      out("      " .. trace.traceback:gsub("\n", "\n      "))
    end
    return nil, true
  end
  handler.suiteEnd = function()
    local passed = #handler.successes
    local failed_n = #handler.failures + #handler.errors
    out(("%d passed, %d failed"):format(passed, failed_n))
    return nil, true
  end
  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "failure" }, failed)
  busted.subscribe({ "error" }, failed)
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  return handler
end
