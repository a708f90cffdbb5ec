"""Where a Rerun recording of an episode goes: a file, a viewer this process spawns, a viewer or gRPC server already
running, or a gRPC server in this process (:func:`open_recording`, :func:`spawn_viewer`).

Every way that leads to a viewer turns Rerun's analytics off first (robodojo.episodes.viewing.analytics). A live
target (``--view``, the ``ROBODOJO_VIEW`` environment variable that episodes in other processes read) is one string,
:func:`parse_live_target`: ``rrd`` (each episode's stream into its own folder as episode.rrd), a ``rerun+http://``
URL (a viewer or server running), or a file path ending in ``.rrd`` (one episode's stream).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rerun as rr

from robodojo.episodes.viewing.analytics import disable_rerun_analytics, rerun_binary
from robodojo.errors import ConfigError

APPLICATION_ID = "robodojo"
RRD_FILE = "episode.rrd"
RRD_SUFFIX = ".rrd"
URL_SCHEMES = ("rerun://", "rerun+http://", "rerun+https://")
#: the live target that writes each episode's stream into its own record folder
EPISODE_FOLDER_TARGET = "rrd"
LOCAL_HOST = "127.0.0.1"


def grpc_url(port: int, host: str = LOCAL_HOST) -> str:
    """The address the SDK streams to for a viewer (or server) listening on ``port``."""
    return f"rerun+http://{host}:{port}/proxy"


@dataclass(frozen=True)
class LiveTarget:
    """Where live views go: ``url`` (a viewer or server), ``file`` (one .rrd), or each episode's folder."""

    url: str = ""
    file: Path | None = None
    episode_folder: bool = False

    def text(self) -> str:
        """The target as :func:`parse_live_target` reads it (what ``ROBODOJO_VIEW`` holds)."""
        if self.url:
            return self.url
        return EPISODE_FOLDER_TARGET if self.episode_folder else str(self.file)


def parse_live_target(text: str) -> LiveTarget:
    """``rrd``, a ``rerun+http://host:port/proxy`` URL, or a path ending in ``.rrd``; ConfigError otherwise."""
    text = text.strip()
    if text == EPISODE_FOLDER_TARGET:
        return LiveTarget(episode_folder=True)
    if text.startswith(URL_SCHEMES):
        return LiveTarget(url=text)
    if text.endswith(RRD_SUFFIX):
        return LiveTarget(file=Path(text).expanduser())
    raise ConfigError(
        f"unknown live view target {text!r}: give 'spawn' (a viewer on this machine), '{EPISODE_FOLDER_TARGET}' "
        f"(episode.rrd in each episode's folder), a rerun+http://HOST:PORT/proxy URL or a FILE{RRD_SUFFIX}"
    )


def new_recording(name: str) -> rr.RecordingStream:
    """A recording of its own (a fresh recording id: episodes never merge), named ``name`` in the viewer."""
    rec = rr.RecordingStream(APPLICATION_ID, recording_id=uuid.uuid4())
    rec.send_recording_name(name)
    return rec


def file_sink(path: Path) -> Any:
    return rr.FileSink(str(path))


def grpc_sink(url: str) -> Any:
    """A viewer or server at ``url``; its machine's analytics are its own, this one's are turned off."""
    disable_rerun_analytics()
    return rr.GrpcSink(url)


def spawn_viewer(port: int) -> str:
    """Start a native Rerun viewer on this machine (analytics off) listening on ``port``; its URL."""
    disable_rerun_analytics()
    # rr.spawn ignores the call without an enabled recording to ask: a throwaway one, which sends nothing
    rec = rr.RecordingStream(APPLICATION_ID, recording_id=uuid.uuid4())
    rr.spawn(port=port, connect=False, hide_welcome_screen=True, executable_path=str(rerun_binary()), recording=rec)
    return grpc_url(port)


def serve_grpc(rec: rr.RecordingStream, port: int) -> str:
    """Serve ``rec`` over gRPC from this process (viewers connect with ``rerun URL``); the URL."""
    disable_rerun_analytics()
    return rec.serve_grpc(grpc_port=port)


def open_recording(rec: rr.RecordingStream, sinks: list[Any]) -> None:
    """Send ``rec`` to every sink of ``sinks`` (file_sink, grpc_sink); call before logging anything.

    rerun-sdk 0.41's ``set_sinks`` opens a file holding the GIL: a FIFO nobody reads would stop every thread of
    the process. Only for files robodojo just created (``robodojo view``); a live view uses :func:`save_to` or
    :func:`stream_to`."""
    rec.set_sinks(*sinks)


def save_to(rec: rr.RecordingStream, path: Path) -> None:
    """Send ``rec`` to the file ``path`` (its opening waits without the GIL: only the calling thread waits)."""
    rec.save(path)


def stream_to(rec: rr.RecordingStream, url: str) -> None:
    """Send ``rec`` to the viewer or server at ``url`` (returns at once; a viewer that is not there costs memory
    for what is buffered, never a wait). Analytics are turned off first."""
    disable_rerun_analytics()
    rec.connect_grpc(url)
