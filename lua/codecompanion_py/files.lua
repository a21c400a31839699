-- Reading a text file the user pointed at (a #{file:}, a prompt of the library) in the
-- editor, before the engine need run: regular files only, opened without blocking (a FIFO
-- or a device is refused, never waited on), at most M.MAX_BYTES. Rules files and what they
-- import go through the engine's door instead (codecompanion_py/repository.py).
local M = {}

M.MAX_BYTES = 1000000

local uv = vim.uv
local FLAGS = uv.constants.O_RDONLY + uv.constants.O_NONBLOCK

local KINDS = { directory = "a directory", fifo = "a named pipe (FIFO)", socket = "a socket", char = "a device",
  block = "a device" }

-- The file's text, or nil and why (it cannot be opened, it is no regular file, too large, or not text).
function M.read_text(path)
  local shown = vim.fn.fnamemodify(path, ":~:.")
  local before = uv.fs_stat(path) -- a FIFO or a device is never even opened
  if before and before.type ~= "file" then
    return nil, ("%s is %s, not a file"):format(shown, KINDS[before.type] or "not a regular file")
  end
  local fd, err = uv.fs_open(path, FLAGS, 0)
  if not fd then
    return nil, tostring(err)
  end
  local stat = uv.fs_fstat(fd) -- what was opened, whatever took the path's place since
  local text, why
  if not stat or stat.type ~= "file" then
    why = ("%s is %s, not a file"):format(shown, stat and KINDS[stat.type] or "not a regular file")
  elseif stat.size > M.MAX_BYTES then
    why = ("%s is larger than %d KB, too large to read"):format(shown, M.MAX_BYTES / 1000)
  else
    text, err = uv.fs_read(fd, stat.size + 1, 0)
    if not text then
      why = tostring(err)
    elseif #text > M.MAX_BYTES then
      text, why = nil, ("%s is larger than %d KB, too large to read"):format(shown, M.MAX_BYTES / 1000)
    elseif text:find("\0", 1, true) then
      text, why = nil, shown .. " is not a text file"
    end
  end
  uv.fs_close(fd)
  return text, why
end

return M
