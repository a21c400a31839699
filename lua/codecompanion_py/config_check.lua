-- Which of CodeCompanion 19's options this plugin honours. A config pasted from
-- CodeCompanion loads as it is; every key it sets that does nothing here is named once,
-- in one notice at setup(), so nothing is silently ignored.
--
-- The tree below follows CodeCompanion 19's option names. A leaf is
--   true       honoured
--   "reason"   not supported here (the reason is shown)
-- and "*" stands for any key at that level (adapters, tools, keymaps by their names).
-- A subtree given as a string is reported once, at its top key.
local M = {}

local OK = true
local ANY = "any" -- a table of the user's own entries, checked where it is used (e.g. adapters by the engine)

local OWN_CONTEXT = "#{buffer}, #{chat} and #{clipboard} work; context of your own cannot be added here yet"
local PALETTE = "the action palette and prompt library are not in this plugin yet"
local TRIGGERS = "the triggers are #, @, / and \\ here"
local EDITOR_CONTEXT = "#{buffer}, #{selection} and the other built-in context work; "
  .. "context of your own cannot be added from the config yet"

local keymap = { modes = OK, callback = OK, description = OK, index = OK, hide = OK, opts = OK }

local chat = {
  adapter = OK,
  model = OK,
  roles = { llm = OK, user = OK },
  keymaps = {
    ["*"] = keymap,
    copilot_stats = "Copilot usage statistics are not shown here",
    _btw = "follow-ups while a reply streams are not in this plugin yet",
  },
  -- CodeCompanion adds these with chat:add_callback(); here they can also be given for every chat
  callbacks = {
    on_created = OK,
    on_before_submit = OK,
    on_submitted = OK,
    on_ready = OK,
    on_completed = OK,
    on_cancelled = OK,
    on_closed = OK,
    on_checkpoint = "the engine holds the messages here; there is no checkpoint callback",
    on_tool_output = "tool output cannot be changed from Lua here",
  },
  tools = {
    ["*"] = ANY,
    groups = ANY,
    opts = {
      auto_submit_errors = "tool results, errors included, always go back to the LLM here",
      auto_submit_success = "tool results always go back to the LLM here",
      default_tools = OK,
      folds = "long tool output is always folded here",
      notify_on_approval = "approval prompts are not announced with vim.notify here",
      system_prompt = "there is no separate tools system prompt here: each tool's own system_prompt is sent",
      tool_replacement_message = OK,
    },
  },
  slash_commands = {
    ["*"] = {
      description = OK,
      callback = OK,
      enabled = OK,
      keymaps = OK,
      path = "a slash command is a callback function here, not a module path",
      opts = { provider = OK, contains_code = OK, ["*"] = "this slash command option is not read here" },
    },
    opts = { acp = { trigger = TRIGGERS } },
  },
  editor_context = EDITOR_CONTEXT,
  variables = EDITOR_CONTEXT,
  opts = {
    system_prompt = OK,
    goto_file_action = OK,
    register = OK,
    yank_jump_delay_ms = "gy yanks without moving the cursor here",
    blank_prompt = "an empty message is not sent here",
    wait_timeout = "approval prompts wait until they are answered here",
    debounce = "the completion plugin's own debounce applies here",
    completion_provider = OK,
    context_management = {
      enabled = OK,
      editing = { trigger = OK, exclude_tools = OK, keep_cycles = OK },
      compaction = {
        trigger = OK,
        min_token_savings = OK,
        adapter = OK,
        fallback_to_chat_adapter = "a failed summary ends the turn with its reason here",
      },
    },
    prompt_decorator = OK,
    max_context_chars = OK, -- this plugin's own: the most of one #{...} capture that is sent
  },
}

local window = {
  layout = OK,
  position = OK,
  width = OK,
  height = OK,
  border = OK,
  relative = OK,
  full_height = OK,
  opts = { ["*"] = OK },
  buflisted = OK,
  sticky = "the chat window does not follow between tabs here",
  pertab = "chats are not kept per tab here",
  title = OK,
  row = OK,
  col = OK,
}

local interactions = {
  chat = chat,
  inline = {
    adapter = OK,
    model = OK,
    keymaps = {
      stop = { modes = OK, callback = OK, description = OK, index = OK, opts = OK },
      ["*"] = "the review's keys are interactions.shared.keymaps here (g1-g6, gv, { })",
    },
    editor_context = OWN_CONTEXT,
    variables = OWN_CONTEXT,
    opts = { ["*"] = "the inline assistant's options are its adapter and keymaps here" },
  },
  cmd = {
    adapter = OK,
    model = OK,
    opts = { system_prompt = "the command's system prompt is this plugin's own" },
  },
  background = {
    adapter = OK,
    chat = {
      callbacks = {
        on_ready = { actions = OK, enabled = OK },
        ["*"] = "only the title action (on_ready) is run in the background here",
      },
      opts = { enabled = OK },
    },
    gates = "the LLM judge of tool calls is not in this plugin",
  },
  code_review = "code review is not in this plugin",
  cli = "the CLI interaction is not in this plugin; its agents run over ACP in the chat instead",
  shared = {
    editor_context = {
      buffer = { opts = { default_params = OK, ["*"] = EDITOR_CONTEXT } },
      ["*"] = EDITOR_CONTEXT,
    },
    keymaps = { ["*"] = keymap }, -- the diff review's: g1 g2 g3 g4 gv } { (and g5 g6, this plugin's)
    ["*"] = EDITOR_CONTEXT,
  },
  opts = { date_format = OK, watcher = "file watching is not in this plugin yet" },
}

M.SPEC = {
  adapters = {
    http = {
      ["*"] = ANY,
      extend = ANY,
      opts = {
        allow_insecure = OK,
        cache_models_for = OK,
        proxy = OK,
        show_presets = OK,
        show_model_choices = OK,
        -- this plugin's own
        connect_timeout = OK,
        read_timeout = OK,
        retries = OK,
        retry_max_wait = OK,
        max_line_bytes = OK,
        max_response_bytes = OK,
      },
    },
    acp = { ["*"] = ANY, extend = ANY, opts = { show_presets = OK } },
    opts = { cmd_timeout = OK },
  },
  interactions = interactions,
  strategies = interactions, -- the older spelling
  display = {
    chat = {
      window = window,
      floating_window = window,
      intro_message = OK,
      separator = "header separators are not drawn here",
      show_settings = OK,
      show_reasoning = OK,
      fold_reasoning = OK,
      show_tools_processing = OK,
      show_token_count = OK,
      token_count = OK,
      show_header_separator = "header separators are not drawn here",
      start_in_insert_mode = OK,
      auto_scroll = OK,
      icons = {
        tool_success = OK,
        tool_failure = OK,
        ["*"] = "only tool_success and tool_failure are shown here",
      },
      show_context = "the shared context is always listed in the Context block of the message here",
      fold_context = "the Context block is a few lines here, not folded",
      treesitter = OK, -- this plugin's own: false uses regex syntax
    },
    action_palette = PALETTE,
    diff = {
      enabled = "the inline assistant always ends in the diff review here",
      threshold_for_chat = "tool edits show their diff in the chat here",
      window = "the review is in the buffer itself here; gv opens a diff tab",
      word_highlights = "the review highlights whole lines here",
      ["*"] = "this diff option is not read here",
    },
    inline = { layout = OK },
    input = "the inline prompt is asked with vim.ui.input here",
    cli = "the CLI interaction is not in this plugin",
    icons = "these icons are not used here",
  },
  prompt_library = PALETTE,
  rules = {
    ["*"] = ANY, -- rule groups: { description, files = {...}, parser, enabled }
    parsers = "the claude and codecompanion parsers follow @imports here; parsers of your own are not read",
    opts = {
      chat = {
        autoload = OK,
        enabled = OK,
        default_params = "a rules file is sent once here, not followed",
        autoload_groups_in_prompt_library = "the prompt library is not in this plugin yet",
      },
      show_presets = OK,
      allowed_paths = OK, -- this plugin's own: what a project's rules may import from outside it
    },
  },
  mcp = {
    servers = ANY, -- { cmd, env, url, headers, roots, timeout, tool_defaults, tool_overrides } or a function
    opts = { default_servers = OK, acp_enabled = OK, timeout = OK },
  },
  extensions = "CodeCompanion's extensions are Lua modules of its own and cannot load here",
  opts = {
    log_level = OK,
    language = OK,
    send_code = OK,
    submit_delay = "a prompt given to a new chat is sent at once here",
    per_project_config = "per-project config files are not read here",
    triggers = TRIGGERS,
    python = OK, -- this plugin's own: the Python that runs the engine
  },
}

local reported = {} ---@type table<string, boolean> keys already named in this session

-- The keys of `opts` that do nothing here: a list of { key = "a.b.c", why = "..." }.
function M.unsupported(opts)
  local found = {}
  local function walk(value, spec, path)
    if spec == OK or spec == ANY then
      return
    end
    if type(spec) == "string" then
      if value ~= false then -- turning off what is not here anyway is no loss
        table.insert(found, { key = path, why = spec })
      end
      return
    end
    if type(value) ~= "table" or vim.islist(value) then
      if type(value) ~= "table" and value ~= false then -- false turns a feature or keymap off
        table.insert(found, { key = path, why = "expects a table, not " .. type(value) })
      end
      return
    end
    for key, child in pairs(value) do
      local name = tostring(key)
      local where = path == "" and name or (path .. "." .. name)
      local sub = spec[name]
      if sub == nil then
        sub = spec["*"]
      end
      if sub == nil then
        table.insert(found, { key = where, why = "not a CodeCompanion option" })
      else
        walk(child, sub, where)
      end
    end
  end
  walk(opts or {}, M.SPEC, "")
  table.sort(found, function(a, b) return a.key < b.key end)
  return found
end

-- Name, once per session, each key of `opts` that does nothing here; returns the lines shown.
function M.report(opts)
  local lines = {}
  for _, item in ipairs(M.unsupported(opts)) do
    if not reported[item.key] then
      reported[item.key] = true
      table.insert(lines, ("  %s: %s"):format(item.key, item.why))
    end
  end
  if #lines > 0 then
    vim.notify("CodeCompanion: these options have no effect here:\n" .. table.concat(lines, "\n"),
      vim.log.levels.WARN)
  end
  return lines
end

return M
