"""The built-in tools, one module each; every module exports `TOOL`."""
