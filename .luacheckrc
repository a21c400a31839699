-- luacheck settings for lua/ and plugin/ (`make lint`)
std = "luajit"
globals = { "vim" }
max_line_length = 120
