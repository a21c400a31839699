"""The built-in HTTP adapters, all listed here: `MODULES` names those with a module of their
own (a wire format or a provider with its own handlers, exporting `ADAPTER`), and `ADAPTERS`
holds the providers that speak OpenAI Chat Completions. Adding a provider is one entry in
one of them (the registry, registry.py, reads both).

Providers that speak OpenAI Chat Completions: each is data over the `openai` adapter
(url, key, models) plus the opts that switch on its quirks in the shared handlers:

- `send_reasoning`: DeepSeek and Kimi thinking modes need `reasoning_content` back on
  assistant turns;
- `tool_id_chars`: Mistral accepts only 9-alphanumeric tool-call ids, so ids minted by
  other providers are mapped (the same way for a call and its result);
- `vision = false` where CodeCompanion has it: models that read no images (`/image` is
  not offered).

Reasoning deltas (`reasoning_content`, `reasoning`, `reasoning_text`), Mistral's list-shaped
content, error objects inside 200 streams and Azure's first chunk with no choices are
handled by the `openai` handlers for every provider, as is what some put in the choice that
ends a stream (Kimi's usage, OpenRouter's `finish_reason: "error"`).
"""

from __future__ import annotations

from typing import Any

from ..base import deep_merge
from .openai import ADAPTER as _OPENAI

# name -> the module under adapters/http/ that exports its `ADAPTER`
MODULES: dict[str, str] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai_compatible": "openai_compatible",
    "openai_responses": "openai_responses",
    "copilot": "copilot",
    "demo": "demo",
    "gemini": "gemini",
    "gemini_interactions": "gemini_interactions",
    "ollama": "ollama",
}


def _provider(
    name: str, formatted_name: str, url: str, key_env: str, model: str, models: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "opts": {"models_url": url.replace("/chat/completions", "/models")},
        "name": name,
        "formatted_name": formatted_name,
        "url": url,
        "env": {"api_key": key_env},
        "schema": {
            "model": {"default": model, "choices": models or [model]},
            "reasoning_effort": {"mapping": None},
        },  # an OpenAI parameter others reject
    }
    return deep_merge(_OPENAI, deep_merge(overrides, extra))


ADAPTERS: dict[str, dict[str, Any]] = {
    "deepseek": _provider(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/chat/completions",
        "DEEPSEEK_API_KEY",
        "deepseek-chat",
        ["deepseek-chat", "deepseek-reasoner"],
        opts={"send_reasoning": True, "vision": False},
    ),
    "kimi": _provider(
        "kimi",
        "Kimi",
        "https://api.moonshot.ai/v1/chat/completions",
        "MOONSHOT_API_KEY",
        "kimi-k2-0905-preview",
        opts={"send_reasoning": True, "vision": False},
    ),
    "mistral": _provider(
        "mistral",
        "Mistral",
        "${url}/v1/chat/completions",
        "MISTRAL_API_KEY",
        "mistral-medium-latest",
        ["mistral-large-latest", "mistral-medium-latest", "magistral-medium-latest", "codestral-latest"],
        env={"url": "https://api.mistral.ai"},
        opts={"tool_id_chars": 9},
    ),
    "openrouter": _provider(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1/chat/completions",
        "OPENROUTER_API_KEY",
        "anthropic/claude-sonnet-4.5",
        headers={"X-Title": "codecompanion-py"},
    ),
    "azure_openai": _provider(
        "azure_openai",
        "Azure OpenAI",
        "${endpoint}/openai/deployments/${deployment}/chat/completions?api-version=${api_version}",
        "AZURE_OPENAI_API_KEY",
        "gpt-4.1",
        env={"endpoint": "AZURE_OPENAI_ENDPOINT", "deployment": "schema.model.default", "api_version": "2024-10-21"},
        headers={"api-key": "${api_key}", "Authorization": None},
        opts={"required_env": ["api_key", "endpoint"], "models_url": None},  # deployments are not listed
    ),
    "xai": _provider(
        "xai",
        "xAI",
        "https://api.x.ai/v1/chat/completions",
        "XAI_API_KEY",
        "grok-4",
        ["grok-4", "grok-code-fast-1", "grok-3-mini"],
        opts={"vision": False},
    ),
    "huggingface": _provider(
        "huggingface",
        "Hugging Face",
        "https://router.huggingface.co/v1/chat/completions",
        "HUGGINGFACE_API_KEY",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        opts={"vision": False},
    ),
    "novita": _provider(
        "novita",
        "Novita",
        "https://api.novita.ai/v3/openai/chat/completions",
        "NOVITA_API_KEY",
        "deepseek/deepseek-v3.1",
        opts={"vision": False},
    ),
    # The GitHub CLI's token, so a `gh auth login` is all the set-up needed.
    "githubmodels": _provider(
        "githubmodels",
        "GitHub Models",
        "https://models.github.ai/inference/chat/completions",
        "cmd:gh auth token",
        "openai/gpt-4.1",
        opts={"auth_hint": "the GitHub CLI login (`gh auth token`; run `gh auth login`)", "vision": False},
    ),
}
