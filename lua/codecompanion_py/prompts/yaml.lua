-- The YAML a prompt's front matter uses, and no more: maps by indentation, lists of scalars
-- or of maps ("- key: value"), strings (bare or quoted), numbers, true/false/null. Anything
-- else is an error that names the line. Every pattern here runs in time linear in its
-- line (an 80 KB line of spaces once took 43 s), and maps and lists nest M.MAX_NESTING deep.
local M = {}

M.MAX_NESTING = 32

-- `text` without the whitespace around it, or the `#` comment after it, in one pass each way.
local function trim(text, comment)
  local first = text:find("%S")
  if not first then
    return ""
  end
  local last = #text
  if comment then
    local hash = text:find("%s#", first)
    last = hash or last
  end
  while last >= first and text:find("^%s", last) do
    last = last - 1
  end
  return text:sub(first, last)
end

local function scalar(text)
  text = trim(text)
  if text == "" or text == "~" or text == "null" then
    return vim.NIL
  elseif text == "true" then
    return true
  elseif text == "false" then
    return false
  elseif tonumber(text) then
    return tonumber(text)
  end
  local quote = text:sub(1, 1)
  if (quote == '"' or quote == "'") and text:sub(-1) == quote and #text >= 2 then
    local inner = text:sub(2, -2)
    return quote == '"' and inner:gsub('\\"', '"'):gsub("\\n", "\n") or inner:gsub("''", "'")
  end
  if text:match("^%[.*%]$") then -- a flow list: [a, b]
    local items = {}
    for part in text:sub(2, -2):gmatch("[^,]+") do
      table.insert(items, scalar(part))
    end
    return items
  end
  return trim(text, true)
end

-- { indent, text, number } for each line that holds something
local function lines_of(source)
  local out = {}
  local number = 0
  for line in (source .. "\n"):gmatch("(.-)\r?\n") do
    number = number + 1
    if line:find("%S") and not line:match("^%s*#") then
      local indent = #line:match("^( *)")
      table.insert(out, { indent = indent, text = line:sub(indent + 1), number = number })
    end
  end
  return out
end

local parse_block

-- A map or a list starting at lines[i] with indentation `indent`, `depth` levels in; returns
-- the value and the next index.
parse_block = function(lines, i, indent, depth)
  local first = lines[i]
  depth = (depth or 0) + 1
  if depth > M.MAX_NESTING then
    error(("line %d: nested deeper than %d levels"):format(first.number, M.MAX_NESTING), 0)
  end
  if first.text:match("^%- ") or first.text == "-" then
    local list = {}
    while lines[i] and lines[i].indent == indent and (lines[i].text:match("^%- ") or lines[i].text == "-") do
      local rest = lines[i].text:sub(3)
      if rest:match("^[%w_%-]+:%s") or rest:match("^[%w_%-]+:$") then
        -- a map in the list: its first key is on the dash line
        local inner = { { indent = indent + 2, text = rest, number = lines[i].number } }
        local j = i + 1
        while lines[j] and lines[j].indent > indent do
          table.insert(inner, lines[j])
          j = j + 1
        end
        table.insert(list, (parse_block(inner, 1, indent + 2, depth)))
        i = j
      else
        table.insert(list, scalar(rest))
        i = i + 1
      end
    end
    return list, i
  end
  local map = {}
  while lines[i] and lines[i].indent == indent do
    local key, value = lines[i].text:match("^([^:]+):%s*(.*)$")
    if not key then
      error(("line %d: expected `key: value`"):format(lines[i].number), 0)
    end
    key = trim(key):gsub("^[\"'](.*)[\"']$", "%1")
    if value == "" and lines[i + 1] and lines[i + 1].indent > indent then
      map[key], i = parse_block(lines, i + 1, lines[i + 1].indent, depth)
    elseif value == "" and lines[i + 1] and lines[i + 1].indent == indent and lines[i + 1].text:match("^%- ") then
      map[key], i = parse_block(lines, i + 1, indent, depth) -- a list at the key's own indentation
    else
      map[key] = scalar(value)
      i = i + 1
    end
  end
  if lines[i] and lines[i].indent > indent then
    error(("line %d: unexpected indentation"):format(lines[i].number), 0)
  end
  return map, i
end

function M.decode(source)
  local lines = lines_of(source)
  if #lines == 0 then
    return {}
  end
  local value, next_line = parse_block(lines, 1, lines[1].indent)
  if lines[next_line] then
    error(("line %d: unexpected indentation"):format(lines[next_line].number), 0)
  end
  return value
end

return M
