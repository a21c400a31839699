"""The only code that imports pynvim or touches the `nvim` object.

`plugin.py` is the remote-plugin class that hands Lua's calls to the engine
(`codecompanion_py.engine`); `bridge.py` delivers the engine's batched UI ops and
notifications to Lua from the engine's thread.
"""
