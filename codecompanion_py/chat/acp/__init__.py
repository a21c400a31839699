"""A chat with a coding agent over ACP: the session (`session`), the agent's updates
(`updates`) and requests (`requests`), the prompt's content blocks (`prompt`) and the
agent's modes, options and models (`state`)."""
