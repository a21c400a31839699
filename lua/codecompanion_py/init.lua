-- Public entry: require("codecompanion_py").setup(opts).
-- The options are kept here and sent to the Python engine on first use. setup() costs
-- Neovim nothing at startup: the engine's host starts in its own process once a UI is up
-- (rpc.start_in_background), or on first use with `opts.background_start = false`.
local M = {}

M.defaults = {
  adapters = { http = {}, acp = {} },
  interactions = {
    chat = {},
    completion = { -- edit predictions while typing (completion/): off, since they send code as you type
      enabled = false,
      debounce = 150, -- ms of pause before asking
      n_completions = 1,
      context_window = 4000, -- tokens of context a request carries
      filetypes = {}, -- { lua = false, ["*"] = true }
      show_with_menu = false, -- ghost text while a completion menu is open
      keymaps = { accept = "<M-l>", accept_word = false, accept_line = false, next = "<M-]>", prev = "<M-[>",
        dismiss = "<C-]>" },
    },
    code_review = { -- CodeCompanion's (code_review.lua)
      enabled = true,
      keymaps = {
        accept = { modes = { n = "a" }, callback = "keymaps.accept", description = "Accept the hunk under the cursor" },
        comment = { modes = { n = "c" }, callback = "keymaps.comment",
          description = "Comment on the hunk under the cursor" },
        diff = { modes = { n = "d" }, callback = "keymaps.diff",
          description = "Diff the hunk under the cursor against the baseline" },
        ignore = { modes = { n = "x" }, callback = "keymaps.ignore",
          description = "Ignore the hunk's file until the baseline advances" },
      },
      display = {
        diff = { enabled = true, layout = "vertical", provider = "native" },
        virtual_text = { enabled = true, icon = "💬 ", overflow = "trunc" },
      },
      opts = { storage_dir = vim.fs.joinpath(vim.fn.stdpath("data"), "codecompanion", "code_review") },
    },
  },
  display = {
    chat = {
      window = { layout = "vertical", width = 0.45 },
      show_token_count = true,
      treesitter = true, -- markdown highlighting by treesitter; false for regex syntax
    },
  },
  opts = { log_level = "ERROR" },
}

M.config = vim.deepcopy(M.defaults)
M.user_opts = {} ---@type table what setup() was given, as given

---@param opts? table CodeCompanion's config, and this plugin's own keys
function M.setup(opts)
  M.user_opts = opts or {}
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), M.user_opts)
  local project = require("codecompanion_py.project").config(vim.tbl_get(M.config, "opts", "per_project_config"))
  if project then -- over setup()'s, and named by the report like it
    M.user_opts = vim.tbl_deep_extend("force", M.user_opts, project)
    M.config = vim.tbl_deep_extend("force", M.config, project)
  end
  require("codecompanion_py.extensions").load(M.config.extensions)
  require("codecompanion_py.config_check").report(M.user_opts)
  local rpc = require("codecompanion_py.rpc")
  rpc.config_changed()
  local completion = package.loaded["codecompanion_py.completion"]
  if completion then completion.disable() end -- its keys as the new config says
  if M.config.interactions.completion.enabled == true then require("codecompanion_py.completion").enable() end
  rpc.start_in_background(M.config.opts or {})
end

-- `interactions.chat.<key>`, else the older spelling `strategies.chat.<key>`.
---@param key string
---@return any
function M.chat_option(key)
  for _, top in ipairs({ "interactions", "strategies" }) do
    local chat = type(M.config[top]) == "table" and M.config[top].chat or nil
    if type(chat) == "table" and chat[key] ~= nil then
      return chat[key]
    end
  end
end

-- The adapter a new chat uses when the command names none.
---@return string|table|nil
function M.chat_adapter()
  return M.chat_option("adapter")
end

return M
