"""The calculator tool of CodeCompanion's tool guide, in Lua, for the e2e tests: its
command, system prompt and schema once, assembled with the handlers and outputs of each
generation of the tool API.

* `calculator_callback(opts)`: the tool specification's example as written there, under
  `callback` with the signatures before v18 (`success(self, tools, cmd, stdout)`).
* `calculator_v19(opts)`: CodeCompanion 19's doc/extending/tools.md, the fields of "Running
  the Calculator tool" plus the `prompt`, `rejected` and `cancelled` outputs of "Adding in
  User Approvals", with the v18+ signatures (`meta.tools.chat`, `success(self, stdout, meta)`).

`opts` is Lua put into the tool's entry (`opts = { requires_approval = true },`).
"""

from __future__ import annotations

_COMMAND = r"""function(self, args, __THIRD__)
  local num1 = tonumber(args.num1)
  local num2 = tonumber(args.num2)
  local operation = args.operation

  if not num1 then
    return { status = "error", data = "First number is missing or invalid" }
  end
  if not num2 then
    return { status = "error", data = "Second number is missing or invalid" }
  end
  if not operation then
    return { status = "error", data = "Operation is missing" }
  end

  local result
  if operation == "add" then
    result = num1 + num2
  elseif operation == "subtract" then
    result = num1 - num2
  elseif operation == "multiply" then
    result = num1 * num2
  elseif operation == "divide" then
    if num2 == 0 then
      return { status = "error", data = "Cannot divide by zero" }
    end
    result = num1 / num2
  else
    return {
      status = "error",
      data = "Invalid operation: must be add, subtract, multiply, or divide",
    }
  end

  return { status = "success", data = result }
end"""

_PROMPT_AND_SCHEMA = r"""system_prompt = [[## Calculator Tool (`calculator`)

## CONTEXT
- You have access to a calculator tool running within CodeCompanion, in Neovim.
- You can use it to add, subtract, multiply or divide two numbers.

### OBJECTIVE
- Do a mathematical operation on two numbers when the user asks

### RESPONSE
- Always use the structure above for consistency.
]],
schema = {
  type = "function",
  ["function"] = {
    name = "calculator",
    description = "Perform simple mathematical operations on a user's machine",
    parameters = {
      type = "object",
      properties = {
        num1 = { type = "integer", description = "The first number in the calculation" },
        num2 = { type = "integer", description = "The second number in the calculation" },
        operation = {
          type = "string",
          enum = { "add", "subtract", "multiply", "divide" },
          description = "The mathematical operation to perform on the two numbers",
        },
      },
      required = { "num1", "num2", "operation" },
      additionalProperties = false,
    },
    strict = true,
  },
},"""

# `__TOOLS__`: the handlers' second parameter, `tools` before v18 and `meta` since
_HANDLERS = r"""handlers = {
  setup = function(self, __TOOLS__)
    return vim.notify("setup function called", vim.log.levels.INFO)
  end,
  on_exit = function(self, __TOOLS__)
    return vim.notify("on_exit function called", vim.log.levels.INFO)
  end,
},"""

_PROMPT = r"""prompt = function(self, __TOOLS__)
    return string.format(
      "Perform the calculation `%s`?",
      self.args.num1 .. " " .. self.args.operation .. " " .. self.args.num2
    )
  end,"""

_CALLBACK_OUTPUT = r"""output = {
  success = function(self, tools, cmd, stdout)
    local chat = tools.chat
    return chat:add_tool_output(self, tostring(stdout[1]))
  end,
  error = function(self, tools, cmd, stderr)
    return vim.notify("An error occurred", vim.log.levels.ERROR)
  end,
  __PROMPT__
},"""

_V19_OUTPUT = r"""output = {
  success = function(self, stdout, meta)
    local chat = meta.tools.chat
    return chat:add_tool_output(self, tostring(stdout[1]))
  end,
  error = function(self, stderr, meta)
    return vim.notify("An error occurred", vim.log.levels.ERROR)
  end,
  __PROMPT__
  rejected = function(self, meta)
    meta.tools.chat:add_tool_output(self, "The user declined to run the calculator tool")
  end,
  cancelled = function(self, meta)
    meta.tools.chat:add_tool_output(self, "The user cancelled the execution of the calculator tool")
  end,
},"""


def _fields(third: str, tools: str, output: str) -> str:
    """The tool's own fields; `third` names its cmd's third parameter, `tools` its handlers'
    second."""
    command = _COMMAND.replace("__THIRD__", third)
    output = output.replace("__PROMPT__", _PROMPT).replace("__TOOLS__", tools)
    return f"""name = "calculator",
cmds = {{ {command}, }},
{_PROMPT_AND_SCHEMA}
{_HANDLERS.replace("__TOOLS__", tools)}
{output}"""


def calculator_callback(opts: str = "") -> str:
    """`calculator = { description, callback = { ... }, <opts> },`: an entry of `tools`."""
    return f"""
calculator = {{
  description = "Perform calculations",
  callback = {{ {_fields("input", "tools", _CALLBACK_OUTPUT)} }},
  {opts}
}},
"""


def calculator_v19(opts: str = "") -> str:
    """The tool's table `{ description, name, cmds, ... }`, as a value (inline, returned by a
    file, or by a callback)."""
    return f"""{{
  description = "Perform calculations",
  {_fields("opts", "meta", _V19_OUTPUT)}
  {opts}
}}"""
