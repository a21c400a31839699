-- The CodeCompanion 19 options and what this plugin does with each: the one table that the
-- code reading an option (`M.get`, which refuses an option not honoured here) and the
-- setup() report of the options that do nothing (config_check.lua) both read. A leaf is
--   true       honoured
--   "any"      a table of the user's own entries, checked where it is used (adapters by the engine)
--   "reason"   not honoured here (the reason is shown)
-- and "*" stands for any key at that level (adapters, tools, keymaps by their names).
-- A subtree given as a string is reported once, at its top key.

---@alias OptionSpec true|string|table<string, OptionSpec>

local M = {}

local OK = true
local ANY = "any"
M.ANY = ANY

local OWN_CONTEXT = "#{buffer}, #{chat} and #{clipboard} work; context of your own cannot be added here yet"
local TRIGGERS = "the triggers are #, @, / and \\ here"
local EDITOR_CONTEXT = "#{buffer}, #{selection} and the other built-in context work as they are here"
local OWN_ENTRY = { callback = OK, description = OK, opts = OK, path = EDITOR_CONTEXT } -- your own #{name}

-- `keys` each honoured, beside the entries of `rest` (more keys, or the reasons some are not)
---@param keys string[]
---@param rest? table<string, OptionSpec>
---@return table<string, OptionSpec>
local function honoured(keys, rest)
  local spec = rest or {}
  for _, key in ipairs(keys) do
    spec[key] = OK
  end
  return spec
end

local keymap = honoured({ "modes", "callback", "description", "index", "hide", "opts" })

local chat = honoured({ "adapter", "model" }, {
  roles = honoured({ "llm", "user" }),
  keymaps = { ["*"] = keymap },
  -- CodeCompanion adds these with chat:add_callback(); here they can also be given for every chat
  callbacks = honoured({
    "on_created", "on_before_submit", "on_submitted", "on_ready", "on_completed", "on_cancelled", "on_closed",
    "on_tool_output",
  }, {
    on_checkpoint = "the engine holds the messages here; there is no checkpoint callback",
  }),
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
    ["*"] = honoured({ "description", "callback", "enabled", "keymaps", "path" }, {
      opts = honoured({ "provider", "contains_code", "token", "url" }, {
        ["*"] = "the built-in commands do not read this here (one given by path gets its opts)",
      }),
    }),
    opts = { acp = { trigger = TRIGGERS, enabled = "the agent's own slash commands are always offered here" } },
  },
  editor_context = { ["*"] = OWN_ENTRY },
  opts = honoured({
    "system_prompt", "goto_file_action", "register", "completion_provider", "prompt_decorator",
    "max_context_chars", -- this plugin's own: the most of one #{...} capture that is sent
  }, {
    yank_jump_delay_ms = "gy yanks without moving the cursor here",
    blank_prompt = "an empty message is not sent here",
    wait_timeout = "approval prompts wait until they are answered here",
    debounce = "the completion plugin's own debounce applies here",
    context_management = {
      enabled = OK,
      editing = honoured({ "trigger", "exclude_tools", "keep_cycles" }),
      compaction = honoured({ "trigger", "min_token_savings", "adapter" }, {
        fallback_to_chat_adapter = "a failed summary ends the turn with its reason here",
      }),
    },
  }),
})

chat.variables = chat.editor_context -- the older spelling

local window = honoured({
  "layout", "position", "width", "height", "border", "relative", "full_height", "buflisted", "title", "row", "col",
}, {
  opts = { ["*"] = OK },
  sticky = "the chat window does not follow between tabs here",
  pertab = "chats are not kept per tab here",
})

local interactions = {
  chat = chat,
  inline = honoured({ "adapter", "model" }, {
    keymaps = { ["*"] = keymap }, -- stop, and the review's keys over interactions.shared.keymaps
    editor_context = OWN_CONTEXT,
    variables = OWN_CONTEXT,
    opts = { ["*"] = "the inline assistant's options are its adapter and keymaps here" },
  }),
  completion = honoured({ "enabled", "adapter", "model", "debounce", "n_completions", "filetypes", "context_window",
    "show_with_menu" }, { keymaps = honoured({ "accept", "accept_word", "accept_line", "next", "prev", "dismiss" }) }),
  cmd = honoured({ "adapter", "model" }, {
    opts = { system_prompt = "the command's system prompt is this plugin's own" },
  }),
  background = {
    adapter = OK,
    chat = {
      callbacks = {
        on_ready = honoured({ "actions", "enabled" }),
        ["*"] = "only the title action (on_ready) is run in the background here",
      },
      opts = { enabled = OK },
    },
    gates = {
      judge = honoured({ "enabled", "adapter" }, {
        opts = { system_prompt = OK },
        action = "the judge is built into the engine here; its action cannot be replaced",
      }),
    },
  },
  code_review = honoured({ "enabled" }, {
    keymaps = { ["*"] = keymap },
    display = { diff = honoured({ "enabled", "layout", "provider" }),
      virtual_text = honoured({ "enabled", "icon", "overflow" }) },
    opts = honoured({ "storage_dir" }),
  }),
  cli = honoured({ "agent" }, {
    agents = ANY,
    opts = honoured({ "auto_insert", "reload" }), -- reload: :checktime as the terminal is left
    keymaps = { next_chat = keymap, previous_chat = keymap },
    providers = { terminal = OK,
      ["*"] = "CLI agents run in a Neovim terminal here (the terminal provider); providers of your own are not read" },
  }),
  shared = {
    editor_context = {
      buffer = { opts = { default_params = OK, ["*"] = EDITOR_CONTEXT }, ["*"] = EDITOR_CONTEXT },
      opts = "which buffers #{buffers} shares is this plugin's own here",
      ["*"] = OWN_ENTRY,
    },
    keymaps = { ["*"] = keymap }, -- the diff review's: g1 g2 g3 g4 gv } { (and g5 g6, this plugin's)
    sandbox = ANY, -- this plugin's own: the commands the LLM and agents run (checked by the engine)
    ["*"] = EDITOR_CONTEXT,
  },
  opts = { date_format = OK, watcher = "file watching is not in this plugin yet" },
}

M.SPEC = {
  adapters = {
    http = {
      ["*"] = ANY,
      extend = ANY,
      opts = honoured({
        "allow_insecure", "cache_models_for", "proxy", "show_presets", "show_model_choices",
        -- this plugin's own
        "connect_timeout", "read_timeout", "retries", "retry_max_wait", "max_line_bytes", "max_response_bytes",
      }),
    },
    acp = { ["*"] = ANY, extend = ANY, opts = { show_presets = OK } },
    opts = { cmd_timeout = OK },
  },
  interactions = interactions,
  strategies = interactions, -- the older spelling
  display = {
    chat = honoured({
      "intro_message", "show_settings", "show_reasoning", "fold_reasoning", "show_tools_processing",
      "show_token_count", "token_count", "start_in_insert_mode", "auto_scroll",
      "treesitter", -- this plugin's own: false uses regex syntax
    }, {
      window = window,
      floating_window = window,
      separator = "header separators are not drawn here",
      show_header_separator = "header separators are not drawn here",
      icons = honoured({ "tool_success", "tool_failure" }, {
        ["*"] = "only tool_success and tool_failure are shown here",
      }),
      show_context = "the shared context is always listed in the Context block of the message here",
      fold_context = "the Context block is a few lines here, not folded",
    }),
    action_palette = {
      provider = OK,
      opts = honoured({ "show_preset_actions", "show_preset_prompts", "show_preset_rules" }, {
        ["*"] = "the palette is the picker's own window here",
      }),
      ["*"] = "the palette is the picker's own window here", -- width, height, prompt
    },
    diff = {
      enabled = "the inline assistant always ends in the diff review here",
      threshold_for_chat = OK,
      window = "the review is in the buffer itself here; gv opens a diff tab",
      word_highlights = honoured({ "additions", "deletions" }),
      ["*"] = "this diff option is not read here",
    },
    inline = { layout = OK },
    input = "the inline prompt is asked with vim.ui.input here",
    cli = { window = window },
    icons = "these icons are not used here",
  },
  prompt_library = { ["*"] = ANY, markdown = { dirs = OK } }, -- prompts by their names
  rules = {
    ["*"] = ANY, -- rule groups: { description, files = {...}, parser, enabled }
    parsers = ANY, -- your own: a function that returns a parser, or a Lua file that does
    opts = {
      chat = honoured({ "autoload", "enabled" }, {
        default_params = "a rules file is sent once here, not followed",
        condition = "rules.opts.chat.enabled (a function too) decides here",
        autoload_groups_in_prompt_library = "rule groups are offered in the action palette here, not as prompts",
      }),
      show_presets = OK,
      allowed_paths = OK, -- this plugin's own: what a project's rules may import from outside it
    },
  },
  mcp = {
    servers = ANY, -- { cmd, env, url, headers, roots, timeout, tool_defaults, tool_overrides } or a function
    opts = honoured({ "default_servers", "acp_enabled", "timeout" }),
  },
  extensions = ANY, -- { name = { enabled, opts, callback } }: extensions.lua
  -- python, background_start: this plugin's own, for the engine's host
  opts = honoured({ "log_level", "language", "send_code", "python", "background_start" }, {
    submit_delay = "a prompt given to a new chat is sent at once here",
    per_project_config = { enabled = OK, files = OK, paths = ANY },
    triggers = TRIGGERS,
  }),
}

-- The spec of `key` inside the table spec `spec` (its own, else the "*" one), nil when none.
---@param spec table<string, OptionSpec>
---@param key string
---@return OptionSpec|nil
function M.child(spec, key)
  local sub = spec[key]
  if sub == nil then
    sub = spec["*"]
  end
  return sub
end

-- The spec of the option at the dotted `path`, nil when it is no option.
---@param path string
---@return OptionSpec|nil
function M.spec(path)
  local spec = M.SPEC ---@type OptionSpec|nil
  for key in path:gmatch("[^.]+") do
    if type(spec) ~= "table" then
      return spec
    end
    spec = M.child(spec, key)
  end
  return spec
end

-- The value setup() gave the option at `path` (a dotted path), over the defaults; the path
-- must be honoured here (an error otherwise: declare it in M.SPEC as it is read).
---@param path string
---@return any
function M.get(path)
  local spec = M.spec(path)
  if not (spec == OK or spec == ANY or type(spec) == "table") then
    error(("option %s is read but not honoured in options.lua"):format(path), 2)
  end
  return vim.tbl_get(require("codecompanion_py").config or {}, unpack(vim.split(path, ".", { plain = true })))
end

return M
