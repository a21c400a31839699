-- The chat buffer's tree-sitter highlighting, kept as cheap in a long chat as in a new one.
--
-- Two of Neovim's costs for a markdown buffer grow with the whole buffer, at every change:
-- - Most of the markdown grammar's tree is "fragile" (built while the parser held two
--   readings of a line), and tree-sitter reuses no fragile node: a re-parse after a new
--   line reads the whole document again, about 0.25 ms per KB here.
-- - The stock injection query combines html blocks, and one combined injection makes Neovim
--   scan the whole tree for injections at every parse, not just the lines drawn.
-- So the chat's parser gets the injection query without `injection.combined`, and once the
-- chat outgrows one region (32 KB) its root is parsed in regions (Neovim's included regions,
-- the machinery of injections): finished turns sit in sealed regions that an edit at the
-- end does not touch, and only the last region, the turn being written, is parsed again.
--
-- Neovim's rules this follows: the number of regions never changes (Neovim drops every tree
-- when it does), so unused regions wait, empty, at the end of the buffer; a region must
-- hold a tree before the next edit (an edit rebuilds the regions from the trees), so changed
-- regions are parsed at once, in a callback no edit can come into; and text inserted at the
-- very start of the buffer falls outside every region, so that is checked after each edit
-- and the regions are laid anew. Each region costs every edit a few microseconds, which is
-- why a small chat keeps Neovim's one region.
local api = vim.api

local M = {}

local SLOTS = 64
local MIN_REGION = 32 * 1024 -- bytes of finished turns in a region, at least

local chats = {} -- buf -> { parser, header, laid, resetting, off }

-- The markdown injection query in effect (Neovim's, or nvim-treesitter's), without
-- `injection.combined`; nil when there is none to remove or the result does not parse.
local lighter_query
local function injection_query()
  if lighter_query == nil then
    lighter_query = false
    local ok, files = pcall(vim.treesitter.query.get_files, "markdown", "injections")
    local texts = {}
    for _, file in ipairs(ok and files or {}) do
      local fd = io.open(file, "r")
      if fd then
        table.insert(texts, fd:read("*a"))
        fd:close()
      end
    end
    local text, removed = table.concat(texts, "\n"):gsub("%(%s*#set!%s+injection%.combined%s*%)", "")
    if removed > 0 and pcall(vim.treesitter.query.parse, "markdown", text) then
      lighter_query = text
    end
  end
  return lighter_query or nil
end

local function size_of(buf)
  return api.nvim_buf_get_offset(buf, api.nvim_buf_line_count(buf))
end

-- What a region holds before the next one starts: 32 KB, or a SLOTS-th of the chat when that
-- is more (past about 2 MB, the last region grows once every region is used).
local function region_limit(buf)
  return math.max(MIN_REGION, math.floor(size_of(buf) / SLOTS))
end

local function rows(buf, first, last)
  return { { first, 0, api.nvim_buf_get_offset(buf, first), last, 0, api.nvim_buf_get_offset(buf, last) } }
end

-- Regions for the whole buffer: a new one starts at a user header once the one before holds
-- enough, and the last one at the last user header (the turn being written is all that is
-- parsed again); the rest wait, empty, at the end.
local function lay_out(buf, header)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local limit, starts, since, last = region_limit(buf), { 0 }, 0, nil
  for i, line in ipairs(lines) do
    if line == header then
      last = i - 1
      if since >= limit and #starts < SLOTS then
        table.insert(starts, last)
        since = 0
      end
    end
    since = since + #line + 1
  end
  if last and last > starts[#starts] and #starts < SLOTS then
    table.insert(starts, last)
  end
  local regions = {}
  for k, first in ipairs(starts) do
    regions[k] = rows(buf, first, starts[k + 1] or #lines)
  end
  for k = #starts + 1, SLOTS do
    regions[k] = rows(buf, #lines, #lines)
  end
  return regions
end

-- A parse the highlighter left half done (its slices are 3 ms) would be resumed by the next
-- parse, whatever its region: it is dropped first, as Neovim's own edits do.
local function drop_half_done(parser)
  pcall(function()
    parser._parser:reset()
  end)
end

-- `work` once no parse of the highlighter's is under way: one resumed after the regions
-- changed would go on with the old ones (only an edit restarts it), and give a region a
-- tree of another. Checked every 10 ms; after `patience` checks, `work` runs if `anyway`.
local function when_idle(buf, chat, work, patience, anyway)
  if chats[buf] ~= chat or not api.nvim_buf_is_valid(buf) then
    return
  end
  local under_way = chat.parser._ranges_being_parsed
  if type(under_way) == "table" and next(under_way) ~= nil and patience > 0 then
    vim.defer_fn(function()
      when_idle(buf, chat, work, patience - 1, anyway)
    end, 10)
  elseif anyway or type(under_way) ~= "table" or next(under_way) == nil then
    work()
  end
end

-- The regions set and every one parsed now: each through a range on its first row (a parse
-- by range also finds that row's injections, and no more), the empty ones through a range
-- around the end.
local function lay(buf, chat)
  local regions = lay_out(buf, chat.header)
  drop_half_done(chat.parser)
  chat.parser:set_included_regions(regions)
  chat.laid = true
  for _, region in ipairs(regions) do
    local r = region[1]
    if r[1] < r[4] then
      chat.parser:parse({ r[1], r[1] + 1 })
    end
  end
  local line_count = api.nvim_buf_line_count(buf)
  chat.parser:parse({ line_count - 1, line_count + 1 })
end

-- Back to Neovim's one region, for good: this Neovim's regions work otherwise.
local function unlay(chat)
  chat.laid, chat.off = false, true
  pcall(chat.parser.set_included_regions, chat.parser, { {} })
  chat.parser:invalidate()
end

local function seal(buf, chat, row)
  if (api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or "") ~= chat.header then
    return -- the buffer changed since the turn ended
  end
  if not chat.laid then
    if api.nvim_buf_get_offset(buf, row) >= region_limit(buf) then
      lay(buf, chat)
    end
    return
  end
  local regions = chat.parser:included_regions()
  local tail
  for i = #regions, 1, -1 do
    local r = regions[i][1]
    if r and r[6] > r[3] then
      tail = i
      break
    end
  end
  local last = tail and regions[tail][1]
  if not last or tail >= SLOTS or row <= last[1] or row >= last[4] then
    return
  end
  local at = api.nvim_buf_get_offset(buf, row)
  if at - last[3] < region_limit(buf) then
    return
  end
  local sealed = vim.deepcopy(regions)
  sealed[tail] = { { last[1], last[2], last[3], row, 0, at } }
  sealed[tail + 1] = { { row, 0, at, last[4], last[5], last[6] } }
  drop_half_done(chat.parser)
  chat.parser:set_included_regions(sealed)
  chat.parser:parse({ row - 1, row + 1 }) -- the two changed regions
end

-- After each edit: the regions still cover the buffer from its first byte, all of them.
local function check(buf)
  local chat = chats[buf]
  if not chat or not chat.laid or chat.resetting or chat.off then
    return
  end
  local regions = chat.parser:included_regions()
  local first = regions[1] and regions[1][1]
  if #regions ~= SLOTS or not first or first[3] ~= 0 then
    chat.resetting = true
    vim.schedule(function()
      when_idle(buf, chat, function()
        chat.resetting = false
        if not pcall(lay, buf, chat) then
          unlay(chat)
        end
      end, 300, true)
    end)
  end
end

-- The chat's parser, made before its filetype is set, so that a `FileType` handler that asks
-- for it (render-markdown and the like) gets this one.
---@param buf integer
---@return vim.treesitter.LanguageTree|nil
function M.parser(buf)
  local query = injection_query()
  local opts = query and { injections = { markdown = query } } or nil
  local ok, parser = pcall(vim.treesitter.get_parser, buf, "markdown", opts)
  return ok and parser or nil
end

-- Highlighting on. False when tree-sitter could not start. A saved chat that is already
-- long is laid in regions at once: one parse of it (about 0.4 ms per KB here).
---@param buf integer
---@param header string the user's header line: regions start there
function M.start(buf, header)
  local parser = M.parser(buf)
  if not parser then
    return false
  end
  local regions = type(parser.set_included_regions) == "function" and type(parser.included_regions) == "function"
  local chat = { parser = parser, header = header, laid = false }
  -- laid before the highlighter listens, which would be told of every region
  if regions and size_of(buf) >= 2 * MIN_REGION and not pcall(lay, buf, chat) then
    unlay(chat)
  end
  if not pcall(vim.treesitter.start, buf, "markdown") then
    return false
  end
  if regions then
    chats[buf] = chat
    parser:register_cbs({
      on_bytes = function()
        check(buf)
      end,
      on_detach = function()
        chats[buf] = nil
      end,
    })
  end
  return true
end

-- A turn ended and the next one's header stands at `row`: once the last region holds enough
-- (and a region is left), the turn before the header is sealed into a region of its own (the
-- first time, the chat is laid in regions). That costs one parse of the sealed turn (about
-- 10 ms for 40 KB here), once, just after the reply, in a callback of its own.
---@param buf integer
---@param row integer
function M.seal(buf, row)
  local chat = chats[buf]
  if not chat or chat.off then
    return
  end
  vim.schedule(function()
    when_idle(buf, chat, function()
      if not chat.resetting and not pcall(seal, buf, chat, row) then
        unlay(chat)
      end
    end, 100, false) -- a turn not sealed now is sealed with the next
  end)
end

return M
