"""What the command line does with Rerun: ``robodojo view EPISODE`` (:func:`view_episode`) and the ``--view`` of
``run``, ``eval``, ``compare`` and ``graph`` (:func:`start_live_view`).

``robodojo view`` reads only a regular file named episode.mcap (or the file given): a symbolic link, a FIFO or a
device is refused, since a record folder's files are not the user's own words and a FIFO would hang the command.
The .rrd is written to a new temporary file beside it and renamed into place, so a planted ``episode.rrd`` link is
replaced, never written through.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robodojo.episodes.mcap_record import MCAP_FILE
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.analytics import analytics_config_path, disable_rerun_analytics
from robodojo.episodes.viewing.convert import ConversionSummary, log_episode_mcap
from robodojo.episodes.viewing.episode_log import EpisodeLog
from robodojo.episodes.viewing.settings import shipped_view_settings
from robodojo.episodes.viewing.sinks import (
    RRD_FILE,
    file_sink,
    grpc_sink,
    new_recording,
    open_recording,
    parse_live_target,
    serve_grpc,
    spawn_viewer,
)
from robodojo.errors import ConfigError

SPAWN = "spawn"  #: ``--view`` with no value: a native viewer on this machine
_SERVE_POLL_S = 1.0  #: ``robodojo view --serve`` checks for Ctrl-C this often


@dataclass(frozen=True)
class ViewReport:
    """What ``robodojo view`` did: the conversion, and where it went."""

    summary: ConversionSummary
    saved: Path | None  #: the .rrd written (None: streamed only)
    url: str  #: the viewer or server it was streamed to ("" for none)
    seconds: float  #: wall time of the conversion [s]

    def text(self) -> str:
        s = self.summary
        c = s.counts
        robot = "no robot model" if s.robot is None else (
            f"robot {s.robot.name}" + ("" if s.robot.loaded else f" as link frames only ({s.robot.reason})")
        )  # fmt: skip
        lines = [
            f"{s.mcap}: {s.messages} messages up to {s.last_stamp_s:.2f} s of simulation time in {self.seconds:.2f} s; "
            f"{c.camera_frames} camera frames ({', '.join(s.cameras) or 'none'}), {c.link_transforms} link transforms, "
            f"{c.tcp_points} trail points ({', '.join(s.arms) or 'no arms'}), {c.targets} targets, {c.texts} texts, "
            f"{c.planned} planned paths; {robot}"
        ]
        if s.cut_short:
            lines.append(f"warning: {s.cut_short}")
        lines += [f"skipped: {line}" for line in s.skipped]
        if self.saved is not None:
            lines.append(
                f"saved {self.saved} ({self.saved.stat().st_size / 1e6:.1f} MB; episode.mcap "
                f"{s.mcap.stat().st_size / 1e6:.1f} MB). Open it with: rerun {self.saved}"
            )
        if self.url:
            lines.append(f"sent to {self.url}")
        lines.append(f"Rerun's analytics are off ({analytics_config_path()}: analytics_enabled false)")
        return "\n".join(lines)


def episode_mcap(path: Path) -> Path:
    """The episode.mcap of an episode folder (or the file itself); ConfigError, saying what is wrong, for anything
    but a regular file."""
    if path.is_dir():
        path = path / MCAP_FILE
        missing = f"{path.parent} has no {MCAP_FILE} (an episode recorded without it, or not an episode folder)"
    else:
        missing = f"no episode folder or {MCAP_FILE} at {path}"
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise ConfigError(missing) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(
            f"{path} is a symbolic link (to {os.readlink(path)}); robodojo view reads only a regular file: give the "
            "file it points to"
        )
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path} is not a regular file (a FIFO, device or socket); robodojo view reads only files")
    return path


def view_episode(
    episode: Path,
    *,
    save: Path | None = None,
    spawn: bool = False,
    connect: str = "",
    serve: bool = False,
    port: int | None = None,
) -> ViewReport:
    """Convert the episode at ``episode`` (a folder or its episode.mcap) into a Rerun recording and send it to
    ``save`` (a .rrd), a viewer spawned here (``spawn``), a viewer or server at ``connect``, and/or a gRPC server in
    this process (``serve``, on ``port``: the call then returns at once and the caller keeps the process up). With
    none of them it is saved as episode.rrd beside the episode.mcap. Rerun's analytics are turned off first."""
    mcap = episode_mcap(episode)
    disable_rerun_analytics()  # whatever the target: the next step is a viewer opening what this writes
    settings = shipped_view_settings()
    port = port or settings.port
    if save is None and not (spawn or connect or serve):
        save = mcap.with_name(RRD_FILE)
    rec = new_recording(mcap.parent.name)
    sinks: list[Any] = []
    part: Path | None = None
    url = ""
    if save is not None:
        if save.is_dir() or not save.parent.is_dir():
            raise ConfigError(f"cannot write {save}: name a .rrd file in a folder that exists")
        try:
            fd, name = tempfile.mkstemp(prefix=f".{save.name}.", suffix=".part", dir=save.parent)
        except OSError as exc:
            raise ConfigError(f"cannot write beside {save}: {exc.strerror} (give --save FILE.rrd elsewhere)") from None
        os.close(fd)
        part = Path(name)
        sinks.append(file_sink(part))
    if spawn:
        url = spawn_viewer(port)
        sinks.append(grpc_sink(url))
    elif connect:
        parse_live_target(connect)  # a URL, or a clear error
        url = connect
        sinks.append(grpc_sink(url))
    try:
        if sinks:
            open_recording(rec, sinks)
        if serve:
            url = serve_grpc(rec, port)
        rec.set_log_time_enabled(False)  # the conversion's wall clock means nothing: only simulation time
        started = time.perf_counter()
        summary = log_episode_mcap(mcap, EpisodeLog(rec, trail_period_s=settings.trail_period_s))
        try:
            rec.flush(timeout_sec=settings.send_timeout_s)  # a viewer that is not there would be waited for forever
        except RuntimeError as exc:
            raise ConfigError(
                f"no Rerun viewer took the recording at {url} within send_timeout_s ({settings.send_timeout_s:g} s, "
                f"config/view.yaml): {str(exc).splitlines()[0]}. "
                + (
                    "The viewer started here did not come up (no display?): use --save and open the file elsewhere"
                    if spawn
                    else "Start one (`rerun`), or use --spawn or --save"
                )
            ) from None
        seconds = time.perf_counter() - started
        if not serve:
            rec.disconnect()
        if part is not None and save is not None:
            os.replace(part, save)  # replaces a link at ``save`` itself, never what it points to
            part = None
    finally:
        if part is not None:
            part.unlink(missing_ok=True)
    return ViewReport(summary=summary, saved=save, url=url, seconds=seconds)


def wait_while_serving() -> None:
    """Keep the process (and its gRPC server) up until Ctrl-C."""
    try:
        while True:
            time.sleep(_SERVE_POLL_S)
    except KeyboardInterrupt:
        pass


def start_live_view(value: str, *, one_episode: bool, port: int | None = None) -> str:
    """Set up ``--view VALUE`` for every episode of this process and of its children (``$ROBODOJO_VIEW``):
    ``spawn`` starts a native viewer here first; ``rrd``, a URL or (``one_episode`` only: a file holds one stream) a
    FILE.rrd are taken as they are. The target."""
    if value == SPAWN:
        target = spawn_viewer(port or shipped_view_settings().port)
    else:
        parsed = parse_live_target(value)
        if parsed.file is not None and not one_episode:
            raise ConfigError(
                f"--view {value}: a file takes one episode's stream; for many give rrd (episode.rrd in each "
                "episode's folder), spawn or a URL"
            )
        if parsed.url:  # a viewer on this machine reads the same analytics config: off before it gets anything
            disable_rerun_analytics()
        target = parsed.text()
    os.environ[VIEW_ENV] = target
    return target
