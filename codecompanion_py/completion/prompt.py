"""The prediction asked of a chat-only model: the text around a cursor marker, and an answer
that is the text to insert there and nothing else."""

from __future__ import annotations

from ..messages import Message
from .context import CompletionContext

CURSOR = "<|cursor|>"

SYSTEM = f"""You predict the text a programmer types next in the Neovim editor. You are shown \
their file with the marker {CURSOR} where the cursor is. Answer with only the text to insert \
at the marker: no Markdown fences, no explanations, nothing from before or after the marker \
repeated. Keep the file's indentation. Stop where the programmer would pause: the end of the \
statement or the block. If nothing fits, answer with nothing."""


def messages(context: CompletionContext) -> list[Message]:
    parts = []
    for snippet in context.recent:
        parts.append(f"Lately edited, {snippet.path}:\n```\n{snippet.text}\n```")
    about = f"The file {context.path or '(unnamed)'}, in {context.filetype or 'plain text'}:"
    parts.append(f"{about}\n```\n{context.prefix}{CURSOR}{context.suffix}\n```")
    return [Message.of("system", SYSTEM), Message.of("user", "\n\n".join(parts))]
