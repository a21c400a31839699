# Entry point for Neovim's Python host. The file is imported under its own name, which is
# why it is not called codecompanion_py.py: that would shadow the package.
try:
    from codecompanion_py.nvim.plugin import CodeCompanionPlugin
except ImportError:  # running from a checkout whose package is not installed in the host's Python
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from codecompanion_py.nvim.plugin import CodeCompanionPlugin

__all__ = ["CodeCompanionPlugin"]
