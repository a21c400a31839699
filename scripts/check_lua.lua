-- A small Lua check for when luacheck is not installed: run as `nvim -l scripts/check_lua.lua
-- FILE...`. Each file must compile, and its bytecode may read only known globals and write
-- none (a misspelled local becomes a global read or write, which this finds).
local KNOWN = {}
for name in ([[
  vim require pairs ipairs next type tostring tonumber select error assert pcall xpcall
  rawget rawset rawequal setmetatable getmetatable unpack table string math os io coroutine
  debug jit bit package print load loadstring loadfile dofile collectgarbage _G _VERSION
]]):gmatch("%S+") do
  KNOWN[name] = true
end

local bc = require("jit.bc")
local problems = 0

local function report(file, message)
  problems = problems + 1
  io.stderr:write(("%s: %s\n"):format(file, message))
end

for _, file in ipairs(arg) do
  local chunk, err = loadfile(file)
  if not chunk then
    report(file, err)
  else
    local listing = {}
    bc.dump(chunk, { write = function(_, text) table.insert(listing, text) end, flush = function() end }, true)
    local seen = {}
    for line in table.concat(listing):gmatch("[^\n]+") do
      local op, name = line:match("(G[GS]ET)%s.-;%s*\"([^\"]+)\"")
      if op and not seen[op .. name] then
        seen[op .. name] = true
        if op == "GSET" then
          report(file, ("writes the global %q"):format(name))
        elseif not KNOWN[name] then
          report(file, ("reads the unknown global %q"):format(name))
        end
      end
    end
  end
end

if problems > 0 then
  io.stderr:write(("%d problem(s) in %d file(s)\n"):format(problems, #arg))
  os.exit(1)
end
print(("lua check: %d files, no problems"):format(#arg))
