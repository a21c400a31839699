"""Edit predictions while the user types: ghost text from the adapters the chat uses.

Lua (`lua/codecompanion_py/completion/`) waits for a pause in typing and sends
`completion.request` with the text around the cursor; `completion_calls.py` hands it to the
`Predictor` (`predictor.py`), which cancels the request before it, fits the context to the
user's budget (`context.py`), asks the provider for the middle of the text (`fim.py`: the
provider's fill-in-the-middle endpoint, or a chat prompt for chat-only models), cleans the
untrusted answers into candidates (`candidates.py`) and sends them back as one
`Suggestions` op. `settings.py` reads `interactions.completion`.
"""
