"""The MCP server's settings (config/agents/mcp.yaml), loaded once and validated with clear errors."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError

CONFIG_PATH = CONFIG_DIR / "agents" / "mcp.yaml"
IMAGE_FORMATS = ("png", "jpeg")
TOOL_SETS = ("robo", "move_eef")  #: what ``robodojo mcp --tools`` chooses from
TRANSPORTS = ("stdio", "http")
LOCAL_HOST = "127.0.0.1"  #: the only address the HTTP transport binds: the robot is served to this machine only
MAX_JPEG_QUALITY = 100


@dataclass(frozen=True)
class McpSettings:
    """What one episode served over MCP allows its client (see config/agents/mcp.yaml)."""

    call_budget: int  #: tool calls per episode, refused ones included (``--max-calls`` overrides it)
    image_format: str  #: ``png`` or ``jpeg``: how ``observe`` encodes the camera images
    jpeg_quality: int  #: 1..100, for ``image_format: jpeg``
    max_argument_chars: int  #: one call's arguments as compact JSON [characters]; longer calls are refused
    idle_timeout_s: float  #: [s] without a request from the client: the episode ends (interrupted)
    max_pending_calls: int  #: calls queued for the robot at once; beyond, a call is refused without waiting
    cli_tools: str  #: the tool set served to a coding-agent CLI as the client (``mcp:<cli>``)

    @property
    def mime_type(self) -> str:
        """The MIME type of ``observe``'s images."""
        return f"image/{self.image_format}"


def load_mcp_settings(path: str | Path = CONFIG_PATH) -> McpSettings:
    """Load and validate config/agents/mcp.yaml (or a file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, [f.name for f in fields(McpSettings)], where)
    s = Section(data, where)
    image_format = s.str("image_format")
    if image_format not in IMAGE_FORMATS:
        raise ConfigError(f"{where}.image_format: expected one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    quality = s.integer("jpeg_quality", positive=True)
    if quality > MAX_JPEG_QUALITY:
        raise ConfigError(f"{where}.jpeg_quality: expected 1 to {MAX_JPEG_QUALITY}, got {quality}")
    return McpSettings(
        call_budget=s.integer("call_budget", positive=True),
        image_format=image_format,
        jpeg_quality=quality,
        max_argument_chars=s.integer("max_argument_chars", positive=True),
        idle_timeout_s=s.number("idle_timeout_s", positive=True),
        max_pending_calls=s.integer("max_pending_calls", positive=True),
        cli_tools=_tool_set(s, "cli_tools"),
    )


def _tool_set(section: Section, key: str) -> str:
    value = section.str(key)
    if value not in TOOL_SETS:
        raise ConfigError(f"{section.where}.{key}: expected one of {', '.join(TOOL_SETS)}, got {value!r}")
    return value
