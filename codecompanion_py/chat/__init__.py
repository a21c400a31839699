"""Chat sessions: history and turns, independent of Neovim."""
