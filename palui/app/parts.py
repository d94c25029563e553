"""The parts the composition root builds straight from Settings (the CLI's `palui kinds` and
`palui doctor` build some of them too, without a running daemon)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from palui.app.remote import Remote
from palui.config import Settings
from palui.connectors import ConnectorManager, ToolsChanged
from palui.connectors.recall import recall_server_settings
from palui.connectors.transport import OpenTransport, open_transport
from palui.db.retention import RetentionDays
from palui.delivery.spoken import VoiceReplies
from palui.domain import RECALL_ID
from palui.errors import ConfigError
from palui.interact.paused import PausedConnectors
from palui.interact.status import StatusInfo
from palui.llm import ModelClient
from palui.llm.speech import ModelSpeaker
from palui.llm.transcription import ModelTranscriber, model_sees_images
from palui.media import MediaIntake, MediaLimits
from palui.memory import Memory, MemoryConfig
from palui.memory.switches import SwitchState
from palui.policy.kinds_file import KindsFile, parse_kinds_file
from palui.policy.matrix import Width
from palui.ports import ChatModel, Files
from palui.tools.catalog import Globs, StoredTool, ToolCatalog
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules
from palui.turns.runner import Limits


def build_model(settings: Settings) -> ModelClient:
    settings.require("model")
    assert settings.model is not None
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    return ModelClient(
        settings.model,
        fallbacks=settings.fallback_models,
        api_base=settings.model_api_base,
        api_key=key,
        request_timeout=settings.model_timeout_s,
        via_litellm=settings.model_via_litellm,
    )


def model_chooser(settings: Settings, model: ChatModel) -> Callable[[str | None], ChatModel]:
    """A chat's chosen model (/model) by name: only one of PALUI_MODELS, with the default's
    fallbacks; any other name (None, one the operator took off the list) is the default."""
    allowed = frozenset(settings.choosable_models)

    def choose(name: str | None) -> ChatModel:
        if name is None or name == model.name or name not in allowed:
            return model
        return model.choosing(name) if isinstance(model, ModelClient) else model

    return choose


def build_transcriber(settings: Settings) -> ModelTranscriber | None:
    """None without PALUI_TRANSCRIPTION_MODEL; its api base and key default to the model's."""
    if not settings.transcription_model:
        return None
    key = settings.transcription_api_key or settings.model_api_key
    return ModelTranscriber(
        settings.transcription_model,
        api_base=settings.transcription_api_base or settings.model_api_base,
        api_key=key.get_secret_value() if key else None,
        request_timeout=settings.model_timeout_s,
        via_litellm=settings.model_via_litellm,
    )


def build_speaker(settings: Settings) -> ModelSpeaker | None:
    """None without PALUI_TTS_MODEL; its api base and key default to the model's."""
    if not settings.tts_model:
        return None
    key = settings.tts_api_key or settings.model_api_key
    return ModelSpeaker(
        settings.tts_model,
        voice=settings.tts_voice,
        api_base=settings.tts_api_base or settings.model_api_base,
        api_key=key.get_secret_value() if key else None,
        request_timeout=settings.model_timeout_s,
        via_litellm=settings.model_via_litellm,
    )


def voice_replies(settings: Settings) -> VoiceReplies | None:
    """Answers to voice notes spoken back (palui.delivery.spoken), with PALUI_TTS_MODEL."""
    speaker = build_speaker(settings)
    return None if speaker is None else VoiceReplies(speaker, settings.media.voice_reply_chars)


def media_intake(settings: Settings, channel: Files, model: str) -> MediaIntake:
    """Files people send (palui.media): the chat layer reads them before a turn."""
    seen: list[bool] = []  # whether the model sees images, asked once per process

    async def sees_images() -> bool:
        if not seen:
            seen.append(await model_sees_images(model, settings.model_vision))
        return seen[0]

    media = settings.media
    limits = MediaLimits(
        media.max_bytes,
        media.max_document_chars,
        media.max_document_pages,
        media.document_timeout_s,
        media.document_memory_mb,
    )
    return MediaIntake(
        channel, limits, transcriber=build_transcriber(settings), sees_images=sees_images
    )


def load_kinds(settings: Settings) -> KindsFile | None:
    path = settings.kinds_file
    if not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: can't be read ({exc.strerror}).") from None
    return parse_kinds_file(text, str(path))


def switch_globs(settings: Settings) -> dict[str, Globs]:
    return {
        f"mcp-{slug}": Globs(server.enable, server.disable) for slug, server in settings.mcp.items()
    }


# Recall's save and forget start switched on (forget always asks first: it is destructive).
RECALL_START_ON = frozenset({f"{RECALL_ID}__add_memory", f"{RECALL_ID}__forget_memory"})


def build_connectors(
    settings: Settings,
    on_tools_changed: ToolsChanged | None = None,
    remote: Remote | None = None,
    *,
    recall_db: str | None = None,
    transport: OpenTransport = open_transport,
) -> ConnectorManager:
    """Every `[mcp.*]` server, and recall unless memory is off (`palui kinds` uses it too);
    with `remote`, those that sign in with OAuth keep their grants in the database. `transport`
    reaches the servers (a test's may serve some in its own process)."""
    return ConnectorManager(
        settings.mcp,
        on_tools_changed=on_tools_changed,
        recall=recall_server_settings(settings, recall_db),
        oauth=remote.setup if remote is not None else None,
        on_lapsed=remote.lapsed if remote is not None else None,
        transport=transport,
    )


def hidden(paused: PausedConnectors, memory: Memory, connector_id: str) -> bool:
    """A connector whose tools a turn is not offered: paused, or memory tools switched off."""
    return paused.is_paused(connector_id) or not memory.offers_tools(connector_id)


def build_catalog(
    settings: Settings,
    kinds: KindsFile | None,
    stored: Mapping[str, StoredTool],
    registry: ToolRegistry | None = None,
) -> ToolCatalog:
    """How every tool is classified and switched (`palui kinds` uses it too). `registry`: the
    connectors a bare name in the kinds file is resolved against."""
    # Only a width palui.toml writes is "from palui.toml"; an unwritten one is the default.
    widths = {
        f"mcp-{slug}": Width(server.allow)
        for slug, server in settings.mcp.items()
        if "allow" in server.model_fields_set
    }
    holders = None if registry is None else functools.partial(tool_holders, registry)
    forms = frozenset(
        f"mcp-{slug}__{tool}"
        for slug, server in settings.mcp.items()
        for tool, each in server.tools.items()
        if each.form
    )
    return ToolCatalog(
        kinds, stored, switch_globs(settings), RECALL_START_ON, widths, holders, forms
    )


def tool_holders(registry: ToolRegistry, tool: str) -> list[str]:
    """The connectors that have a tool of this (bare) name now."""
    return [t.id for t in registry.toolsets if any(r.name == tool for r in t.tools())]


def memory_config(settings: Settings) -> MemoryConfig:
    recall = settings.recall
    return MemoryConfig(
        defaults=SwitchState(recall.auto_recall, recall.auto_save, recall.memory_tools),
        history_messages=settings.history_messages,
        compact_after=settings.compact_after,
    )


def retention_days(settings: Settings) -> RetentionDays:
    return RetentionDays(**settings.retention.model_dump())


def status_info(settings: Settings, model: str, database_kind: str) -> StatusInfo:
    s = settings
    return StatusInfo(
        model=model,
        fallbacks=tuple(s.fallback_models),
        database_kind=database_kind,
        daily_token_cap=s.daily_token_cap,
        runs_per_hour=s.runs_per_hour,
        models=s.choosable_models or (model,),
    )


def utc_now() -> datetime:
    return datetime.now(UTC)


def limits(s: Settings, tool_rules: ToolRules) -> Limits:
    return Limits(
        max_steps=s.max_steps,
        turn_timeout_s=s.turn_timeout_s,
        history_messages=s.history_messages,
        daily_token_cap=s.daily_token_cap,
        runs_per_hour=s.runs_per_hour,
        max_tools=s.max_tools,
        tool_rules=tool_rules,
        jobs_may_create_jobs=s.jobs_may_create_jobs,
        allowed_destinations=s.allowed_destinations,
    )


def web_base(settings: Settings, http_url: str | None) -> str:
    """Where sign-in links point: PALUI_WEB_URL, else the HTTP server's own address."""
    if settings.web_url:
        return settings.web_url
    if http_url is not None:
        return http_url
    host = settings.http_host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.http_port}"
