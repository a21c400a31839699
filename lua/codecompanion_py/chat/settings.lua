-- The settings header at the top of a chat (`display.chat.show_settings`): the engine
-- sends its entries (the `settings` op), the user edits them, and each submit sends back
-- what the header says.
local api = vim.api
local buffer = require("codecompanion_py.chat.buffer")

local M = {}

local FENCE = "---"

local function enabled()
  return require("codecompanion_py.chat.config").display().show_settings == true
end

-- The rows (0-based, end exclusive) of the header at the top of `lines`, with the blank
-- line after it, and the closing fence's index; nil when the buffer has none.
local function header_rows(lines)
  if lines[1] ~= FENCE then
    return nil
  end
  for i = 2, #lines do
    if lines[i] == FENCE then
      return 0, (lines[i + 1] == "" and i + 1 or i), i
    end
  end
end

local function yaml_value(value)
  if value == nil or value == vim.NIL then
    return "null"
  end
  return type(value) == "string" and vim.json.encode(value) or tostring(value)
end

-- The `settings` op: the header rewritten with the engine's entries.
---@param chat CodeCompanionChat
---@param op { entries: { key: string, value: any }[] }
function M.render(chat, op)
  if not enabled() or not api.nvim_buf_is_valid(chat.bufnr) then
    return
  end
  local first, last = header_rows(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false))
  local header = {}
  if #op.entries > 0 then
    header = { FENCE }
    for _, entry in ipairs(op.entries) do
      table.insert(header, ("%s: %s"):format(entry.key, yaml_value(entry.value)))
    end
    vim.list_extend(header, { FENCE, "" })
  end
  buffer.set_lines(chat, first or 0, last or 0, header)
end

local function scalar(text)
  if text == "" or text == "null" or text == "~" then
    return vim.NIL
  elseif text == "true" or text == "false" then
    return text == "true"
  elseif text:match('^".*"$') then
    local ok, value = pcall(vim.json.decode, text)
    return ok and value or text:sub(2, -2)
  elseif text:match("^'.*'$") then
    return text:sub(2, -2):gsub("''", "'")
  end
  return tonumber(text) or text
end

-- The settings the user edited in the chat's header (`key: value` per line), or nil when
-- there is no header. Lines that are not `key: value` go to the engine under `_unparsed`,
-- which refuses them by name.
---@param buf integer
---@return table|nil
function M.read(buf)
  if not enabled() then
    return nil
  end
  -- the header is at the top and short: a long chat is not read whole at every submit
  local lines = api.nvim_buf_get_lines(buf, 0, 200, false)
  local _, _, closing = header_rows(lines)
  if not closing and #lines == 200 then
    lines = api.nvim_buf_get_lines(buf, 0, -1, false)
    _, _, closing = header_rows(lines)
  end
  if not closing then
    return nil
  end
  local settings = {}
  for i = 2, closing - 1 do
    local line = lines[i]
    if vim.trim(line) ~= "" and not line:match("^%s*#") then
      local key, value = line:match("^([%w_%.%-]+):%s*(.-)%s*$")
      if key then
        settings[key] = scalar(value)
      else
        settings._unparsed = settings._unparsed or {}
        table.insert(settings._unparsed, line)
      end
    end
  end
  return settings
end

return M
