"""CodeCompanion's code review: the agent's hunks since the baseline, comments on them, and
the text that sends them (`#{code_review}`, `review.md`). The editor side is
lua/codecompanion_py/code_review.lua; the calls from it are review_calls.py."""
