"""The only code that touches pynvim or the `nvim` object.

`plugin.py` is the remote-plugin class; `bridge.py` sends batched render ops to Lua;
`engine.py` runs the async engine on its own loop thread; `render.py` coalesces ops.
"""
