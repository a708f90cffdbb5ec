"""Rerun's usage analytics, turned off before robodojo hands Rerun anything.

Rerun's viewer, its CLI and the SDK's own helpers (the crash handler, a served web viewer) send anonymous usage
events to Rerun's servers (PostHog, ``tel.rerun.io``) unless the user's analytics config says no (rerun-sdk 0.41:
``re_analytics``; the first run sends nothing, every later one does). The opt-out is ``rerun analytics disable``,
which writes ``analytics_enabled: false`` into ``<config dir>/rerun/analytics.json`` (``$XDG_CONFIG_HOME`` or
``~/.config`` on Linux): a setting of the user's, read by every Rerun program on the machine, which is why
:func:`disable_rerun_analytics` uses the same command instead of anything of its own. It runs the command only when the
file does not already say no, runs it with ``CI`` set (Rerun's pipeline never starts on CI, so the command's own
invocation is not reported either), and checks the file afterwards: a viewer is not started when the opt-out did not
take.

The web viewer (``rerun --web-viewer``, ``rr.serve_web_viewer``) is left out of robodojo: in the browser its analytics
have no opt-out at all (rerun-sdk 0.41 sends every event from the page), so ``robodojo view`` offers a native viewer,
a gRPC server a native viewer connects to, or a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from robodojo.errors import RobodojoError

ANALYTICS_FILE = "analytics.json"
#: The one environment variable Rerun's analytics pipeline reads to stay off without a config (re_analytics: "CI").
_CI_ENV = "CI"
_CLI_PATH_ENV = "RERUN_CLI_PATH"  #: rerun_cli's own override of the binary it runs
CLI_TIMEOUT_S = 30.0  #: ``rerun analytics disable`` starts the 280 MB binary once: seconds on a cold disk


class RerunAnalyticsError(RobodojoError):
    """Rerun's analytics could not be turned off: nothing is spawned or served."""


def analytics_config_path() -> Path:
    """Where Rerun keeps its analytics config (the ``directories`` crate's config dir for project ``rerun``)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "rerun" / ANALYTICS_FILE
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "rerun" / ANALYTICS_FILE


def analytics_disabled() -> bool:
    """Whether the user's Rerun analytics config says no (a missing or unreadable file does not)."""
    try:
        data = json.loads(analytics_config_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("analytics_enabled") is False


def rerun_binary() -> Path:
    """The ``rerun`` program that rerun-sdk installs (its viewer and CLI), as rerun_cli finds it."""
    override = os.environ.get(_CLI_PATH_ENV)
    if override:
        return Path(override)
    import rerun_cli

    return Path(rerun_cli.__file__).parent / "rerun"


def disable_rerun_analytics() -> Path:
    """Make sure Rerun's analytics are off (``rerun analytics disable`` when the config does not say so yet); the
    config file. Raises RerunAnalyticsError when they could not be turned off."""
    path = analytics_config_path()
    if analytics_disabled():
        return path
    binary = rerun_binary()
    command = [str(binary), "analytics", "disable"]
    try:
        done = subprocess.run(
            command, env={**os.environ, _CI_ENV: "1"}, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
            check=False,
        )  # fmt: skip
        why = f"exit code {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    if not analytics_disabled():
        raise RerunAnalyticsError(
            f"could not turn Rerun's analytics off ({' '.join(command)}: {why}); {path} does not say "
            "analytics_enabled: false. Run `rerun analytics disable`, then try again"
        )
    return path
