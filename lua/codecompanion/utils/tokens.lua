-- require("codecompanion.utils.tokens") for configs and extensions: calculate(text), a rough
-- count of the tokens in `text` (letters and digits about six to a token, other characters
-- about three, whitespace free), as CodeCompanion's own estimate is used in its examples.
return require("codecompanion_py.alias").load({ "lua/codecompanion/utils/tokens.lua" }, function()
  local M = {}
  ---@param text string
  ---@return integer
  function M.calculate(text)
    if type(text) ~= "string" or text == "" then
      return 0
    end
    local words = #text:gsub("[^%w]", "")
    local other = #text:gsub("[%w%s]", "")
    return math.ceil(words / 6) + math.ceil(other / 3)
  end
  return M
end)
