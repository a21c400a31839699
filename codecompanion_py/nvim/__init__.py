"""The only code that imports pynvim or touches the `nvim` object.

`host.py` (the plugin's own RPC job) and `plugin.py` (the remote-plugin class) hand Lua's
calls to the engine (`codecompanion_py.engine`), which runs on pynvim's loop; `channel.py`
delivers the engine's batched UI ops and notifications to Lua.
"""
