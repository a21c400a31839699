"""The user's `setup()` table, in CodeCompanion's shape where it applies.

    adapters = { http = { <name> = <table from adapters.extend(...)>, opts = {...},
                          extend = { <name> = <overrides> } },
                 acp = { <name> = <table over a built-in agent, or a new one with extends>,
                         opts = {...}, extend = {...} },
                 opts = { cmd_timeout = <ms> } }
    strategies = { chat = { adapter = "name" | { name = ..., model = ... }, model = ...,
                            opts = { system_prompt = "..." | function(ctx) }, tools = {...} } }
    interactions = { chat = ... }          -- the newer spelling of `strategies`
    opts = { log_level = "ERROR", system_prompt = "..." }

Lua functions arrive as references (`adapters/lua.py` makes them `LuaFunction`s) and stay
where they were: env values, handlers, schema functions, a system prompt function.

`adapters.<http|acp>.extend.<name>` (CodeCompanion's "extend table") is merged over the
adapter `<name>` resolves to; `extend` and `opts` are never adapters themselves.

`adapters.http.opts` holds what applies to every HTTP request: `connect_timeout` and
`read_timeout` (seconds), `retries` (tries after a failed one, default 2; 0: none),
`retry_max_wait` (the longest `retry-after` honoured, seconds, default 60),
`max_line_bytes` (one SSE/NDJSON line or event, default 16 MiB) and `max_response_bytes`
(a whole response, default 256 MiB); see client.py. CodeCompanion's own keys there:
`proxy` and `allow_insecure` (the HTTP client's proxy and TLS check), `cache_models_for`
(seconds the model list is kept), `show_presets` (false: the adapter picker lists only the
user's adapters; `adapters.acp.opts.show_presets` likewise for agents) and
`show_model_choices` (read by the Lua side).

`load()` only reads: the adapter tables become the config's own registry
(`Config.adapters`, adapters/registry.py), the HTTP client options `Config.http`, which the
engine gives the clients it makes (outbound.py); the rest is kept here too.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .adapters import lua
from .adapters.base import DEFAULT_CMD_TIMEOUT, written_secrets
from .adapters.models import DEFAULT_CACHE_SECONDS
from .adapters.registry import EXTENDS_KEY, Adapters, Definition, merge_over
from .chat import compaction
from .chat.judge import JudgeSettings
from .chat.session import DEFAULT_SYSTEM_PROMPT
from .completion.settings import CompletionSettings
from .errors import ConfigError
from .logfile import LEVELS
from .outbound import ClientSettings
from .sandbox import SandboxPolicy
from .scrubber import KNOWN
from .tools.registry import ToolSettings

DEFAULT_CHAT_ADAPTER = "openai"
EDITOR_KEY = "__editor"  # what rpc.lua adds to the setup() table: facts about the editor


@dataclass
class Config:
    chat_adapter: Any = DEFAULT_CHAT_ADAPTER
    system_prompt: str | lua.LuaFunction | None = DEFAULT_SYSTEM_PROMPT
    show_http_presets: bool = True
    show_acp_presets: bool = True
    adapters: Adapters = field(default_factory=Adapters)  # the built-ins and the user's, HTTP and ACP
    models_cache_seconds: float = DEFAULT_CACHE_SECONDS  # adapters.http.opts.cache_models_for
    log_level: str = "ERROR"
    read_timeout: float = 120.0
    http: ClientSettings = field(default_factory=ClientSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    # what was left out, each said to the user once; the rest of the config still applies
    problems: list[str] = field(default_factory=list)
    language: str = "English"  # opts.language
    editor: dict[str, str] = field(default_factory=dict)  # what Lua adds (rpc.lua payload_for_config)
    # interactions.background: an LLM writes each chat's title after its first turn
    inline_adapter: Any = None  # interactions.inline.adapter (None: the chat's)
    cmd_adapter: Any = None  # interactions.cmd.adapter
    mcp: dict[str, Any] = field(default_factory=dict)  # CodeCompanion's `mcp` table (mcp/servers.py)
    make_titles: bool = False
    context_management: compaction.Settings = field(default_factory=compaction.Settings)
    background_adapter: Any = None  # None: the chat's own adapter
    judge: JudgeSettings = field(default_factory=JudgeSettings)  # interactions.background.gates.judge
    completion: CompletionSettings = field(default_factory=CompletionSettings)  # interactions.completion
    diff_threshold_for_chat: int = 0  # display.diff.threshold_for_chat (0: every edit is reviewed in its file)

    def chat_system_prompt(self, cwd: str) -> str | lua.LuaFunction | None:
        """The system prompt of a chat in `cwd`. The default one, as CodeCompanion's, tells
        the LLM the language to write in, the working directory, the date, the Neovim
        version and the OS; a prompt of the user's own (a string, or a function whose ctx
        has these facts) is used as it is."""
        if self.system_prompt != DEFAULT_SYSTEM_PROMPT:
            return self.system_prompt
        facts = [
            f"All non-code text responses must be written in the {self.language} language.",
            f"The user's current working directory is {cwd}.",
            f"The current date is {datetime.date.today().strftime('%A, %d %B %Y')}.",
        ]
        if "nvim_version" in self.editor:
            facts.append(f"The user's Neovim version is {self.editor['nvim_version']}.")
        if "os" in self.editor:
            facts.append(f"The user is working on a {self.editor['os']} machine.")
        return DEFAULT_SYSTEM_PROMPT + "\n\nAdditional context:\n" + "\n".join(facts)


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if value is None or value == []:  # Lua sends an empty table as an empty list
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table")
    return value


def load(raw: Mapping[str, Any] | None) -> Config:
    """The settings a setup() table makes, its adapters among them. Nothing else changes,
    but for the secrets it holds as they are, which the scrubber knows from now on."""
    raw = lua.decode(_table(raw, "setup()"))
    config = Config()
    adapter_tables = _table(raw.get("adapters"), "adapters")
    http = _table(adapter_tables.get("http"), "adapters.http")
    acp = _table(adapter_tables.get("acp"), "adapters.acp")
    written: list[Any] = []  # tables that may hold a key as it is (scrubber.py knows it from now)
    http_entries: dict[str, Definition] = {}
    for name, definition in _user_adapters(http, "http").items():
        if definition == []:  # Lua's empty table arrives as a list
            definition = {}
        if not isinstance(definition, (Mapping, str)):
            config.problems.append(f"adapters.http.{name} must be a table or an adapter name; it was left out")
            continue
        http_entries[name] = definition
        written.append(definition)
    agents: dict[str, Mapping[str, Any]] = {}
    for name, definition in _user_adapters(acp, "acp").items():
        if definition == []:
            definition = {}
        if not isinstance(definition, Mapping):
            config.problems.append(f"adapters.acp.{name} must be a table; it was left out")
            continue
        agents[name] = definition
        written.append(definition)
    shared_opts = _table(adapter_tables.get("opts"), "adapters.opts")
    cmd_timeout = _number(shared_opts, "cmd_timeout", DEFAULT_CMD_TIMEOUT * 1000) / 1000
    config.adapters = Adapters(http_entries, agents, cmd_timeout=cmd_timeout)
    _chat_settings(raw, config)
    _background_settings(raw, config)
    diff = _table(_table(raw.get("display"), "display").get("diff"), "display.diff")
    limit = diff.get("threshold_for_chat", 0)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
        raise ConfigError(f"display.diff.threshold_for_chat must be a number of at least 0, not {limit!r}")
    config.diff_threshold_for_chat = int(limit)
    config.mcp = dict(_table(raw.get("mcp"), "mcp"))
    written.extend(_table(config.mcp.get("servers"), "mcp.servers").values())
    KNOWN.remember(secret for table in written for secret in written_secrets(table))
    for key in ("strategies", "interactions"):  # the newer spelling wins
        section = _table(raw.get(key), key)
        for name in ("inline", "cmd"):
            table = _table(section.get(name), f"{key}.{name}")
            if table.get("adapter"):
                spec = table["adapter"]
                if isinstance(spec, str) and isinstance(table.get("model"), str):
                    spec = {"name": spec, "model": table["model"]}
                setattr(config, f"{name}_adapter", spec)
    completion = _table(_table(raw.get("interactions"), "interactions").get("completion"), "interactions.completion")
    config.completion = CompletionSettings.from_config(completion)
    for key in ("strategies", "interactions"):  # the newer spelling wins
        opts = _chat_opts(raw, key)
        if "context_management" in opts:
            config.context_management = compaction.Settings.from_config(opts["context_management"])
    config.problems.extend(config.context_management.problems)
    tools: dict[str, Any] = {}
    for key in ("strategies", "interactions"):  # the newer spelling wins, entry by entry
        chat = _table(_table(raw.get(key), key).get("chat"), f"{key}.chat")
        tools.update(_table(chat.get("tools"), f"{key}.chat.tools"))
    config.tools = ToolSettings.from_config(tools)
    config.problems.extend(config.tools.problems)
    shared = _table(_table(raw.get("interactions"), "interactions").get("shared"), "interactions.shared")
    config.tools.sandbox = SandboxPolicy.from_options(shared.get("sandbox"))
    opts = _table(raw.get("opts"), "opts")
    config.log_level = _log_level(opts.get("log_level", config.log_level))
    if "system_prompt" in opts:
        config.system_prompt = opts["system_prompt"] or None
    language = opts.get("language")
    if isinstance(language, str) and language.strip():
        config.language = language.strip()
    editor = _table(raw.get(EDITOR_KEY), EDITOR_KEY)
    config.editor = {
        key: str(editor[key])
        for key in ("nvim_version", "os", "history_dir", "log_file", "data_dir")
        if editor.get(key)
    }
    # what the plugin keeps (saved chats, the log, snapshots) is not for sandboxed commands to read
    private = [config.editor[key] for key in ("history_dir", "log_file", "data_dir") if key in config.editor]
    config.tools.sandbox = config.tools.sandbox.denying(private)
    http_opts = _table(http.get("opts"), "adapters.http.opts")
    config.read_timeout = float(http_opts.get("read_timeout", config.read_timeout))
    config.show_http_presets = http_opts.get("show_presets", True) is not False
    config.show_acp_presets = _table(acp.get("opts"), "adapters.acp.opts").get("show_presets", True) is not False
    config.models_cache_seconds = _number(http_opts, "cache_models_for", DEFAULT_CACHE_SECONDS)
    config.http = _client_settings(http_opts)
    return config


def _user_adapters(section: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The adapters of `adapters.<kind>`, with its `extend` table merged over them. A name
    that only `extend` mentions is the preset of that name with the overrides."""
    found = {name: value for name, value in section.items() if name not in ("opts", "extend")}
    for name, patch in _table(section.get("extend"), f"adapters.{kind}.extend").items():
        if not isinstance(patch, Mapping):
            raise ConfigError(f"adapters.{kind}.extend.{name} must be a table")
        current = found.get(name)
        if isinstance(current, Mapping):
            found[name] = merge_over(current, patch)
        elif isinstance(current, str) and current != name:
            found[name] = {EXTENDS_KEY: current, **patch}
        else:
            found[name] = {EXTENDS_KEY: name, **patch}
    return found


def _chat_settings(raw: Mapping[str, Any], config: Config) -> None:
    """The chat's adapter and system prompt: `interactions.chat` wins over `strategies.chat`."""
    adapter_found = prompt_found = False
    for key in ("interactions", "strategies"):
        chat = _table(_table(raw.get(key), key).get("chat"), f"{key}.chat")
        if not adapter_found and "adapter" in chat:
            adapter_found = True
            config.chat_adapter = chat["adapter"]
            if isinstance(chat["adapter"], str) and isinstance(chat.get("model"), str):
                config.chat_adapter = {"name": chat["adapter"], "model": chat["model"]}
        opts = _table(chat.get("opts"), f"{key}.chat.opts")
        if not prompt_found and "system_prompt" in opts:
            prompt_found = True
            prompt = opts["system_prompt"]
            if prompt is not None and not isinstance(prompt, (str, lua.LuaFunction)):
                raise ConfigError(f"{key}.chat.opts.system_prompt must be a string or a function")
            config.system_prompt = prompt or None


TITLE_ACTION = "interactions.background.builtin.chat_make_title"


def _background_settings(raw: Mapping[str, Any], config: Config) -> None:
    """CodeCompanion's background chat interaction: `opts.enabled = true` turns it on, and its
    `on_ready` callback runs the title action unless the user's `actions` leave it out."""
    for key in ("strategies", "interactions"):  # the newer spelling wins
        background = _table(_table(raw.get(key), key).get("background"), f"{key}.background")
        if "adapter" in background:
            config.background_adapter = background["adapter"] or None
        gates = _table(background.get("gates"), f"{key}.background.gates")
        if "judge" in gates:
            config.judge = _judge_settings(_table(gates["judge"], f"{key}.background.gates.judge"), key)
        chat = _table(background.get("chat"), f"{key}.background.chat")
        if "enabled" not in _table(chat.get("opts"), f"{key}.background.chat.opts"):
            continue
        on_ready = _table(_table(chat.get("callbacks"), "callbacks").get("on_ready"), "on_ready")
        actions = on_ready.get("actions", [TITLE_ACTION])
        config.make_titles = (
            _table(chat.get("opts"), "opts").get("enabled") is True
            and on_ready.get("enabled", True) is not False
            and TITLE_ACTION in (actions if isinstance(actions, list) else [])
        )


def _judge_settings(judge: Mapping[str, Any], key: str) -> JudgeSettings:
    prompt = _table(judge.get("opts"), f"{key}.background.gates.judge.opts").get("system_prompt")
    if prompt is not None and not isinstance(prompt, (str, lua.LuaFunction)):
        raise ConfigError(f"{key}.background.gates.judge.opts.system_prompt must be a string or a function")
    return JudgeSettings(
        enabled=judge.get("enabled", True) is not False, adapter=judge.get("adapter") or None, system_prompt=prompt
    )


def _chat_opts(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return _table(_table(_table(raw.get(key), key).get("chat"), f"{key}.chat").get("opts"), f"{key}.chat.opts")


def adapter_names(config: Config) -> list[str]:
    """What the adapter picker offers: `show_presets = false` leaves only the user's own."""
    mine = set(config.adapters.user_names())
    http = [n for n in config.adapters.names("http") if config.show_http_presets or n in mine]
    acp = [n for n in config.adapters.names("acp") if config.show_acp_presets or n in mine]
    return http + acp


def _number(opts: Mapping[str, Any], key: str, default: float) -> float:
    value = opts.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"adapters opts.{key} must be a number of at least 0, not {value!r}")
    return float(value)


def _client_settings(opts: Mapping[str, Any]) -> ClientSettings:
    base = ClientSettings()
    values: dict[str, Any] = {}
    for key, kind, least in (
        ("retries", int, 0),
        ("retry_max_wait", float, 0),
        ("max_line_bytes", int, 1),
        ("max_response_bytes", int, 1),
    ):
        value = opts.get(key, getattr(base, key))
        try:
            number = kind(value)
        except (TypeError, ValueError):
            number = None
        if number is None or isinstance(value, bool) or number < least:
            raise ConfigError(f"adapters.http.opts.{key} must be a number of at least {least}, not {value!r}")
        values[key] = number
    proxy = opts.get("proxy")
    if proxy is not None and not isinstance(proxy, str):
        raise ConfigError(f"adapters.http.opts.proxy must be a URL such as socks5://127.0.0.1:9999, not {proxy!r}")
    connect_timeout = float(opts.get("connect_timeout", base.connect_timeout))
    return ClientSettings(
        **values, proxy=proxy or None, verify=opts.get("allow_insecure") is not True, connect_timeout=connect_timeout
    )


def _log_level(value: Any) -> str:
    """CodeCompanion's level names (logfile.LEVELS), in capitals."""
    level = str(value).upper()
    if level not in LEVELS:
        raise ConfigError(f"opts.log_level {value!r} is not one of {', '.join(sorted(LEVELS))}")
    return level
