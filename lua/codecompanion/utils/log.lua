-- require("codecompanion.utils.log") for extensions: log:info("found %s", x) and the other
-- levels, as CodeCompanion's logger is called. Records at or above `opts.log_level` go to the
-- engine, which scrubs them into codecompanion.log with its own; held (a few) until it runs.
return require("codecompanion_py.alias").load({ "lua/codecompanion/utils/log.lua" }, function()
  local LEVELS = { TRACE = 0, DEBUG = 1, INFO = 2, WARN = 3, ERROR = 4 }
  local held = {}
  local log = {}
  for level, rank in pairs(LEVELS) do
    log[level:lower()] = function(_, format, ...)
      local wanted = tostring((require("codecompanion_py").config.opts or {}).log_level or "ERROR"):upper()
      if rank < (LEVELS[wanted] or LEVELS.ERROR) then
        return
      end
      local n, args = select("#", ...), { ... }
      for i = 1, n do
        args[i] = type(args[i]) == "string" and args[i] or vim.inspect(args[i])
      end
      local ok, text = pcall(string.format, tostring(format), unpack(args, 1, n))
      table.insert(held, { level = level, message = ok and text or tostring(format) })
      local rpc = require("codecompanion_py.rpc")
      if not rpc.running() then
        held = vim.list_slice(held, #held - 49) -- the latest 50
        return
      end
      for _, record in ipairs(held) do
        pcall(rpc.notify_raw, "log", record)
      end
      held = {}
    end
  end
  return log
end)
