-- MCP in the chat's editor side: `/mcp` (start, stop, restart a server, see its tools,
-- attach one of its resources), a running server's prompts as `/mcp:<server>:<prompt>`
-- (their arguments asked for), and `#{mcp:<server>:<uri>}` (chat/context.lua) to share a
-- resource. The servers themselves live in the engine (codecompanion_py/mcp/).
local rpc = require("codecompanion_py.rpc")
local pickers = require("codecompanion_py.pickers")
local words = require("codecompanion_py.words")

local M = {}

-- The configured servers as the engine sees them (none when it cannot say).
---@return table[]
function M.status()
  local ok, servers = pcall(rpc.request, "mcp.status", { cwd = vim.fn.getcwd() })
  return ok and type(servers) == "table" and servers or {}
end

local function label(server)
  local state = server.running and ("running, " .. words.count(#server.tools, "tool")) or "stopped"
  if not server.running and type(server.last_exit) == "string" then
    state = state .. " (" .. server.last_exit:gsub("\n.*", "") .. ")"
  end
  return ("%s [%s] %s"):format(server.name, server.transport, state)
end

local function attach(server, insert)
  local ok, resources = pcall(rpc.request, "mcp.resources", { server = server.name, cwd = vim.fn.getcwd() })
  if not ok then
    return vim.notify("CodeCompanion: " .. tostring(resources), vim.log.levels.ERROR)
  end
  if #resources == 0 then
    return vim.notify("CodeCompanion: MCP server " .. server.name .. " has no resources")
  end
  pickers.select(resources, {
    prompt = server.name .. " resources",
    format_item = function(resource) return resource.name .. "  " .. resource.uri end,
  }, function(resource)
    if resource then insert("#{mcp:" .. server.name .. ":" .. resource.uri .. "}") end
  end)
end

-- `/mcp`: a server, then what to do with it.
---@param chat CodeCompanionChat
---@param insert fun(text: string)
function M.slash(chat, insert)
  local servers = M.status()
  if #servers == 0 then
    return vim.notify("CodeCompanion: no MCP servers are configured (mcp.servers)")
  end
  pickers.select(servers, { prompt = "MCP servers", format_item = label }, function(server)
    if not server then
      return
    end
    local actions = server.running and { "Stop", "Restart", "Show its tools", "Attach a resource" }
      or { "Start (its tools join this chat)", "Attach a resource" }
    pickers.select(actions, { prompt = server.name }, function(action)
      if not action then
        return
      elseif action == "Show its tools" then
        vim.notify(("CodeCompanion: %s's tools: %s"):format(server.name, table.concat(server.tools, ", ")))
      elseif action == "Attach a resource" then
        attach(server, insert)
      else
        local verb = action:match("^(%a+)"):lower()
        rpc.notify("mcp.control", { chat_id = chat.bufnr, server = server.name, action = verb, cwd = vim.fn.getcwd() })
      end
    end)
  end)
end

-- Slash commands for the prompts of running servers: name -> { description, run }.
---@return table<string, { description: string, run: fun(chat: CodeCompanionChat, insert: fun(text: string)) }>
function M.prompt_commands()
  local commands = {}
  for _, server in ipairs(M.status()) do
    for _, prompt in ipairs(server.prompts or {}) do
      commands[("mcp:%s:%s"):format(server.name, prompt.name)] = {
        description = prompt.description ~= "" and prompt.description or ("MCP prompt of " .. server.name),
        run = function(_, insert)
          local arguments, given = prompt.arguments or {}, {}
          local function ask(i)
            local argument = arguments[i]
            if not argument then
              local ok, text = pcall(rpc.request, "mcp.prompt",
                { server = server.name, name = prompt.name, arguments = given, cwd = vim.fn.getcwd() })
              if not ok then
                return vim.notify("CodeCompanion: " .. tostring(text), vim.log.levels.ERROR)
              end
              return insert(text)
            end
            vim.ui.input({ prompt = ("%s%s: "):format(argument.name, argument.required and "" or " (optional)") },
              function(value)
                if value == nil then
                  return -- cancelled
                end
                if value ~= "" then
                  given[argument.name] = value
                end
                ask(i + 1)
              end)
          end
          ask(1)
        end,
      }
    end
  end
  return commands
end

return M
