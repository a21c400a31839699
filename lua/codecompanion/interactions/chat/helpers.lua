-- require("codecompanion.interactions.chat.helpers") for extensions (mcphub adds a tool's
-- images with it). Images from an extension are not sent here: said once a chat, not fatal.
return require("codecompanion_py.alias").load({ "lua/codecompanion/interactions/chat/helpers.lua" }, function()
  local M = {}

  ---@param chat CodeCompanionChat
  ---@param _image table
  function M.add_image(chat, _image)
    if not chat.image_warned then
      chat.image_warned = true
      vim.notify("CodeCompanion: helpers.add_image() is not supported by codecompanion-py: image left out",
        vim.log.levels.WARN)
    end
  end

  return M
end)
