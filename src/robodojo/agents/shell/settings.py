"""The shell harness's settings (config/agents/shell.yaml), loaded once and validated with clear errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys, resolve_path
from robodojo.errors import ConfigError

CONFIG_PATH = CONFIG_DIR / "agents" / "shell.yaml"
IMAGE_FORMATS = ("png",)
USER_NAMESPACE_MODES = ("auto", "required", "off")


@dataclass(frozen=True)
class CommandLimits:
    """Bounds of the base commands (seed 003: 0.20 m per axis, 90 deg per axis)."""

    max_translation_m: float
    max_rotation_deg: float
    max_wait_s: float
    image_format: str
    frames_after_motion: bool


@dataclass(frozen=True)
class AgentLimits:
    """What one shell command of the acting agent may take."""

    command_timeout_s: float
    max_output_chars: int
    max_image_bytes: int
    max_command_chars: int
    default_tools: tuple[str, ...]

    @property
    def max_call_chars(self) -> int:
        """The longest raw arguments of a call kept in the history: a longest command, every character escaped."""
        return 2 * self.max_command_chars + 100


@dataclass(frozen=True)
class SandboxSettings:
    """The acting agent's sandbox (robodojo.agents.shell.sandbox)."""

    bwrap: str
    uid: int
    user_namespace: str  #: auto | required | off
    runtime_paths: tuple[str, ...]
    python_distributions: tuple[str, ...]
    robodojo_modules: tuple[str, ...]


@dataclass(frozen=True)
class McpClientMode:
    """How a coding-agent CLI runs as the MCP client of the episode's robot server (``mcp:<cli>``,
    robodojo.agents.mcp.cli_agent): its command line, and a configuration file and variables added to its own."""

    command: str  #: bash command line; {mcp_port}, {model_port} and {model} are filled in
    config_template: Path | None  #: written to /opt/robo/etc/ (placeholders filled in)
    env: Mapping[str, str]  #: over the CLI's own ``env``


@dataclass(frozen=True)
class CodingAgentCli:
    """A coding-agent command line run whole inside the sandbox (robodojo.agents.shell.external)."""

    name: str
    install: Path  #: its installation (a venv, an npm prefix), shown read-only at /opt/agent
    executable: str  #: a file inside ``install`` that exists once it is installed
    command: str  #: bash command line; {model_port} and {model} are filled in
    config_template: Path | None  #: written to /opt/robo/etc/ with {model_port} filled in
    env: Mapping[str, str]
    mcp_client: McpClientMode | None = None  #: None: the CLI is not run as an MCP client (it has no MCP support)

    @property
    def installed(self) -> bool:
        """Whether ``executable`` is there (make setup and make agents install them)."""
        return (self.install / self.executable).is_file()


@dataclass(frozen=True)
class CodingAgents:
    clis: Mapping[str, CodingAgentCli]
    model_port: int
    run_timeout_s: float
    mcp_port: int  #: where an MCP-client CLI finds the robot server on the sandbox's loopback

    def get(self, name: str) -> CodingAgentCli:
        if name not in self.clis:
            raise ConfigError(f"unknown coding agent {name!r}; configured: {', '.join(self.clis)} ({CONFIG_PATH})")
        return self.clis[name]


@dataclass(frozen=True)
class OptimizerSettings:
    """The repair loop's optimizer (robodojo.agents.shell.optimizer, robodojo.episodes.evolve)."""

    max_calls_per_round: int
    max_edits_per_layout: int


@dataclass(frozen=True)
class ShellSettings:
    commands: CommandLimits
    agent: AgentLimits
    sandbox: SandboxSettings
    coding_agents: CodingAgents
    optimizer: OptimizerSettings


def load_shell_settings(path: str | Path = CONFIG_PATH) -> ShellSettings:
    """Load and validate config/agents/shell.yaml (or a file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, {"commands", "agent", "sandbox", "coding_agents", "optimizer"}, where)
    c = Section(data.get("commands", {}), f"{where}.commands")
    reject_unknown_keys(c.data, CommandLimits.__dataclass_fields__, c.where)
    image_format = c.str("image_format")
    if image_format not in IMAGE_FORMATS:
        raise ConfigError(f"{c.where}.image_format: expected one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    commands = CommandLimits(
        max_translation_m=c.number("max_translation_m", positive=True),
        max_rotation_deg=c.number("max_rotation_deg", positive=True),
        max_wait_s=c.number("max_wait_s", positive=True),
        image_format=image_format,
        frames_after_motion=c.boolean("frames_after_motion"),
    )
    a = Section(data.get("agent", {}), f"{where}.agent")
    reject_unknown_keys(a.data, AgentLimits.__dataclass_fields__, a.where)
    agent = AgentLimits(
        command_timeout_s=a.number("command_timeout_s", positive=True),
        max_output_chars=a.integer("max_output_chars", positive=True),
        max_image_bytes=a.integer("max_image_bytes", positive=True),
        max_command_chars=a.integer("max_command_chars", positive=True),
        default_tools=a.strings("default_tools"),
    )
    s = Section(data.get("sandbox", {}), f"{where}.sandbox")
    reject_unknown_keys(s.data, SandboxSettings.__dataclass_fields__, s.where)
    runtime = s.strings("runtime_paths")
    for p in runtime:
        if not p.startswith("/"):
            raise ConfigError(f"{s.where}.runtime_paths: expected absolute paths, got {p!r}")
    sandbox = SandboxSettings(
        bwrap=s.str("bwrap"),
        uid=s.integer("uid", positive=True),
        user_namespace=_choice(s, "user_namespace", USER_NAMESPACE_MODES),
        runtime_paths=runtime,
        python_distributions=s.strings("python_distributions"),
        robodojo_modules=s.strings("robodojo_modules"),
    )
    o = Section(data.get("optimizer", {}), f"{where}.optimizer")
    reject_unknown_keys(o.data, OptimizerSettings.__dataclass_fields__, o.where)
    optimizer = OptimizerSettings(
        max_calls_per_round=o.integer("max_calls_per_round", positive=True),
        max_edits_per_layout=o.integer("max_edits_per_layout", positive=True),
    )
    coding = _coding_agents(Section(data.get("coding_agents", {}), f"{where}.coding_agents"))
    return ShellSettings(commands, agent, sandbox, coding, optimizer)


def _choice(section: Section, key: str, choices: tuple[str, ...]) -> str:
    value = section.str(key)
    if value not in choices:
        raise ConfigError(f"{section.where}.{key}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _env(section: Section) -> dict[str, str]:
    env = section.data.get("env", {})
    if not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ConfigError(f"{section.where}.env: expected a mapping of names to strings, got {env!r}")
    return dict(env)


def _template(section: Section) -> Path | None:
    template = section.data.get("config_template")
    return resolve_path(template) if template else None


def _port(section: Section, key: str) -> int:
    port = section.integer(key, positive=True)
    if port > 65535:
        raise ConfigError(f"{section.where}.{key}: expected a TCP port, got {port}")
    return port


def _coding_agents(c: Section) -> CodingAgents:
    clis = {}
    for name in c.names():
        if name in ("model_port", "mcp_port", "run_timeout_s"):
            continue
        a = c.section(name)
        reject_unknown_keys(
            a.data, {"install", "executable", "command", "config_template", "env", "mcp_client"}, a.where
        )
        mcp = a.optional_section("mcp_client")
        if mcp is not None:
            reject_unknown_keys(mcp.data, {"command", "config_template", "env"}, mcp.where)
        clis[name] = CodingAgentCli(
            name=name,
            install=resolve_path(a.str("install")),
            executable=a.str("executable"),
            command=a.str("command"),
            config_template=_template(a),
            env=_env(a),
            mcp_client=None if mcp is None else McpClientMode(mcp.str("command"), _template(mcp), _env(mcp)),
        )
    model_port, mcp_port = _port(c, "model_port"), _port(c, "mcp_port")
    if model_port == mcp_port:
        raise ConfigError(f"{c.where}: model_port and mcp_port must differ, both are {model_port}")
    return CodingAgents(clis, model_port, c.number("run_timeout_s", positive=True), mcp_port)
