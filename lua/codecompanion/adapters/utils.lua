-- `require("codecompanion.adapters.utils")`, for handlers written for CodeCompanion
-- (see require("codecompanion_py.adapters").utils).
return require("codecompanion_py.adapters").utils
