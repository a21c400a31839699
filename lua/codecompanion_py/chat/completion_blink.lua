-- The module blink.cmp loads for this plugin's source (chat/completion.lua has it).
return require("codecompanion_py.chat.completion").blink
