-- Workflows: a prompt of several steps sent one after another in one chat (write the code,
-- run the tests, fix until they pass). After each reply the next step goes, when its
-- `condition` holds (else it is skipped); a step with `repeat_until` goes again until that
-- holds, at most `opts.max_repeats` times (default 3), and the workflow stops at that limit
-- and says so. A step with `opts.auto_submit = false` waits in the chat for the user to send
-- it. The chat shows "Workflow: step 2 of 3" as it goes; `q` (stopping the reply) ends the
-- workflow. Conditions are functions of { chat, step, repeats, last_reply }.
local api = vim.api
local prompts = require("codecompanion_py.prompts")
local run = require("codecompanion_py.prompts.run")
local words = require("codecompanion_py.words")

local M = {}

M.DEFAULT_MAX_REPEATS = 3
M.running = {} ---@type table<integer, table> by chat buffer

local ns = api.nvim_create_namespace("codecompanion_py_workflow")

-- The text of the last reply: from the last header before the last `## Me` to it.
local function last_reply(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local me = require("codecompanion_py.chat").user_header()
  local stop = #lines + 1
  for i = #lines, 1, -1 do
    if lines[i] == me then
      stop = i
      break
    end
  end
  for i = stop - 1, 1, -1 do
    if lines[i]:match("^## ") and lines[i] ~= me then
      return vim.trim(table.concat(vim.list_slice(lines, i + 1, stop - 1), "\n"))
    end
  end
  return ""
end

local function holds(fn, flow)
  if type(fn) ~= "function" then
    return fn ~= false
  end
  local ok, result = pcall(fn, { chat = flow.chat, step = flow.index, repeats = flow.repeats,
    last_reply = last_reply(flow.chat.bufnr) })
  if not ok then
    vim.notify("CodeCompanion: workflow condition failed: " .. tostring(result), vim.log.levels.ERROR)
    return false
  end
  return result and true or false
end

local function show_step(flow, text)
  local buf = flow.chat.bufnr
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local row = math.max(0, api.nvim_buf_line_count(buf) - 1)
  api.nvim_buf_set_extmark(buf, ns, row, 0, { virt_text = { { text, "Comment" } }, virt_text_pos = "eol" })
  flow.status = text
end

local function stop(flow, why)
  M.running[flow.chat.bufnr] = nil
  pcall(api.nvim_del_autocmd, flow.autocmd)
  show_step(flow, "Workflow: " .. why)
  vim.notify("CodeCompanion: workflow " .. flow.item.name .. ": " .. why)
end

-- The step to send after a reply (nil: none left).
local function next_step(flow)
  local step = flow.item.prompts[flow.index]
  if step and step.repeat_until and not holds(step.repeat_until, flow) then
    if flow.repeats >= flow.max_repeats then
      return nil,
        ("stopped: step %d did not get there in %s"):format(flow.index, words.count(flow.max_repeats, "repeat"))
    end
    flow.repeats = flow.repeats + 1
    return flow.index
  end
  local index = flow.index + 1
  while flow.item.prompts[index] do
    local candidate = flow.item.prompts[index]
    if holds(candidate.condition, flow) then
      flow.repeats = 0
      return index
    end
    index = index + 1
  end
  return nil, "done"
end

local function send(flow, index)
  flow.index = index
  local step = flow.item.prompts[index]
  local messages, failed = prompts.messages(flow.item, step, flow.context)
  if failed then return stop(flow, ("step %d: %s"):format(index, failed)) end
  local text = table.concat(vim.tbl_map(function(m) return m.content end,
    vim.tbl_filter(function(m) return m.role == "user" end, messages)), "\n\n")
  local total = #flow.item.prompts
  local label = ("Workflow: step %d of %d"):format(index, total)
    .. (flow.repeats > 0 and (" (repeat %d of %d)"):format(flow.repeats, flow.max_repeats) or "")
  local buf = flow.chat.bufnr
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  lines[#lines] = nil
  api.nvim_buf_set_lines(buf, #lines, -1, false, vim.split(text, "\n", { plain = true }))
  show_step(flow, label)
  for _, message in ipairs(messages) do
    if type(message.opts) == "table" and message.opts.auto_submit == false then return end -- the user sends it
  end
  require("codecompanion_py.chat").submit(buf)
end

-- Start the workflow `item` in a new chat.
---@param item codecompanion_py.PromptItem its `prompts` are the steps
---@param context table prompts.context()
---@return table? flow
function M.start(item, context)
  local first = item.prompts[1]
  if not first then
    return vim.notify("CodeCompanion: the workflow " .. item.name .. " has no steps", vim.log.levels.WARN)
  end
  local chat = run.chat(vim.tbl_extend("force", item, { opts = vim.tbl_extend("force", item.opts,
    { auto_submit = item.opts.auto_submit ~= false }) }), first, context)
  if not chat then return nil end -- a helper failed, and said so
  local flow = {
    item = item,
    chat = chat,
    context = context,
    index = 1,
    repeats = 0,
    max_repeats = tonumber(item.opts.max_repeats) or M.DEFAULT_MAX_REPEATS,
  }
  M.running[chat.bufnr] = flow
  show_step(flow, ("Workflow: step 1 of %d"):format(#item.prompts))
  flow.autocmd = api.nvim_create_autocmd("User", {
    pattern = { "CodeCompanionChatDone", "CodeCompanionChatStopped", "CodeCompanionChatClosed" },
    callback = function(event)
      local data = event.data or {}
      if data.bufnr ~= chat.bufnr or M.running[chat.bufnr] ~= flow then
        return
      end
      if event.match ~= "CodeCompanionChatDone" or data.status ~= "success" then
        return stop(flow, ("stopped at step %d"):format(flow.index))
      end
      local index, why = next_step(flow)
      if not index then
        return stop(flow, why)
      end
      vim.schedule(function() -- after the chat has its new `## Me`
        if M.running[chat.bufnr] == flow then
          send(flow, index)
        end
      end)
    end,
  })
  return flow
end

return M
