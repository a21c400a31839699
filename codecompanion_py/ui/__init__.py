"""What the engine shows: the UI ops (`ops`), their batching (`sink`), the mapping from
canonical events to ops (`view`) and the questions it asks the editor (`editor`).

Nothing here imports pynvim: a channel (`nvim.channel` in Neovim, a recorder in tests)
delivers the encoded batches.
"""
