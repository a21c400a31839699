"""The secrets the engine knows (`scrubber.KNOWN`: adapter keys, MCP credentials, the
environment's `*_API_KEY`/`*_TOKEN` values) never go out with outside text: a command's
output, a file the LLM reads, a web page, a rules file, a log line.

Real subprocesses, a real page server on 127.0.0.1, and real Neovim against a local LLM
server that records every request.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codecompanion_py import outbound, web
from codecompanion_py.demo.server import ScriptedServer, ServerThread
from codecompanion_py.messages import Message, ReasoningPart, TextPart, ToolCall, cleaned
from codecompanion_py.scrubber import KNOWN, scrub_secrets
from tests.e2e.conftest import editor, nvim_home  # noqa: F401 (fixtures)
from tests.e2e.test_chat_surface import chat_config, reply, send

from ..tools.test_catalog import Editor, chat
from .test_web_door import answering, serve
from .test_web_door import reply as page

KEY = "sk-live-9f8e7d6c5b4a39281706"


def test_the_environment_gives_its_credentials_and_nothing_else(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", KEY)
    monkeypatch.setenv("DEPLOY_TOKEN", "tok_0123456789abcdef")
    monkeypatch.setenv("PASSWORD_STORE_DIR", "/home/someone/.password-store")  # a path, not a secret
    monkeypatch.setenv("KEYTIMEOUT", "1")
    monkeypatch.setenv("EDITOR_THEME", "solarized-dark-high")  # not named like a credential
    KNOWN.forget()
    text = f"a={KEY} b=tok_0123456789abcdef c=/home/someone/.password-store d=solarized-dark-high"
    assert KNOWN.scrub(text) == "a=*** b=*** c=/home/someone/.password-store d=solarized-dark-high"


def test_words_paths_and_addresses_are_never_taken_for_keys(monkeypatch):
    """What would be masked in every text if it were learned: the words of a local database
    URL, a placeholder key, an address, a header or a setting that is no credential."""
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres:postgres@localhost/app")
    monkeypatch.setenv("REDIS_URL", "redis://:password@localhost:6379")
    monkeypatch.setenv("PASSWORD_STORE_KEY", "someone.person@example.com")
    monkeypatch.setenv("LMSTUDIO_API_KEY", "lm-studio-local-server")  # no digit: a placeholder
    KNOWN.forget()
    KNOWN.remember(["anything-goes-here", "not-needed", "production-db-pass"])
    KNOWN.remember_headers({"Accept": "application/json, text/event-stream", "Authorization": "Bearer not-needed"})
    prose = (
        "Connect to postgres with the password field; Use Bearer authentication in production, "
        "mail someone.person@example.com, run lm-studio-local-server; anything-goes-here."
    )
    assert KNOWN.scrub(prose) == prose


def test_a_tool_call_runs_with_the_arguments_the_model_gave_and_signed_reasoning_is_kept():
    """Scrubbing the history a call runs from would write `***` into files; a signed thinking
    block whose text changed is refused by the provider. Only the copy a request sends is
    scrubbed of a known key in earlier calls' arguments."""
    KNOWN.remember([KEY])
    call = ToolCall(id="c1", name="create_file", arguments={"content": f"token = {KEY}"})
    thinking = ReasoningPart(text=f"the key {KEY}", provider_data={"signature": "sig"})
    reply = Message(role="assistant", parts=(TextPart(text=f"key {KEY}"), thinking, call))
    kept = cleaned(reply, KNOWN.without_known)
    assert kept.parts[0] == TextPart(text="key ***") and kept.parts[1] is thinking and kept.parts[2] is call
    sent = cleaned(reply, KNOWN.without_known, arguments=True)
    assert sent.parts[2].arguments == {"content": "token = ***"}


def test_a_secret_cut_short_leaves_no_beginning_behind():
    KNOWN.remember([KEY])
    assert KNOWN.scrub(f"echoed: {KEY[:12]}") == "echoed: ***"
    assert KNOWN.without_known(f"{KEY}{KEY[:9]}") == "******"
    # A text that only ends like a key begins ("ran 5 tests" and "sk-...") keeps its end.
    assert scrub_secrets("ran 5 tests", (), cut=True) == "ran 5 tests"


async def test_a_commands_output_and_a_file_the_llm_reads_go_out_without_a_known_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", KEY)
    KNOWN.forget()
    (tmp_path / "config.txt").write_text(f"endpoint = example\napi_key = {KEY}\n")
    session = chat(tmp_path, Editor(default="accept"))
    printed = await session.run("run_command", cmd="cat config.txt", flag=None)
    read = await session.run("read_file", filepath="config.txt")
    for result in (printed, read):
        assert "api_key = ***" in result.content and KEY[:8] not in result.content
    shown = json.dumps(session.surface.ops)  # what the chat was given to show
    assert "api_key = ***" in shown and KEY[:8] not in shown


async def test_a_page_that_echoes_a_key_arrives_without_it_even_where_it_is_cut(monkeypatch):
    KNOWN.remember([KEY])
    monkeypatch.setattr(web, "MAX_CHARS", 1000)
    body = ("x" * (1000 - 10) + KEY + " and again " + KEY).encode()  # the cap falls inside the first
    async with serve(answering(page(body))) as site:
        text = await web.page_text(site.url + "/echo", settings=outbound.ClientSettings())
    assert KEY[:6] not in text and "cut at 1000 characters" in text


def test_the_engines_log_lines_and_tracebacks_are_scrubbed():
    """As in the host: no handler of its own, so Python's last resort prints to the stderr
    that Neovim shows when the engine stops."""
    code = f"""
import logging
from codecompanion_py.scrubber import KNOWN, scrub_logs
KNOWN.remember([{KEY!r}])
scrub_logs()
logger = logging.getLogger("codecompanion_py.test")
logger.warning("the server said %s", {KEY!r})
try:
    raise RuntimeError("bad key " + {KEY!r})
except RuntimeError:
    logger.exception("failed")
"""
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stderr
    assert "the server said ***" in err and "bad key ***" in err and KEY[:8] not in err, err


@pytest.mark.nvim
def test_a_rules_file_holding_the_adapters_own_key_never_sends_it(editor, tmp_path):  # noqa: F811
    """The key comes from a `cmd:`, so the engine learns it only as the first request is
    built: the rules file read at the chat's open is scrubbed then, on its way out."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "AGENTS.md").write_text(f"Deploy with OPENAI_KEY={KEY}\n")
    with ServerThread(ScriptedServer.sequence([reply("one"), reply("two")])) as server:
        editor.lua(f"""require("codecompanion").setup({{
          adapters = {{ http = {{ testllm = function()
            return require("codecompanion.adapters").extend("openai_compatible", {{
              env = {{ url = "{server.url}", api_key = "cmd:echo {KEY}" }}, schema = {{ model = {{ default = "m" }} }},
            }})
          end }} }},
          {chat_config("")}
        }})""")
        editor.nvim.command(f"cd {project}")
        editor.nvim.command("CodeCompanionChat")
        send(editor, "hello", 1)
        send(editor, "again", 2)
        bodies = [json.dumps(request.json()) for request in server.requests]
        assert len(bodies) == 2
        assert all("Deploy with OPENAI_KEY=***" in body and KEY[:8] not in body for body in bodies)
        assert all(request.headers.get("authorization") == f"Bearer {KEY}" for request in server.requests)
