"""The hand-off between the MCP server (asyncio, one task per request) and the episode (one thread, one call at a time).

Every tool call and resource read the client sends becomes a :class:`ClientRequest` in one queue; the episode thread
takes them in arrival order (:meth:`CallChannel.next`), so calls that arrive together are served one after the other
and only one motion ever runs. Each request carries a future that the episode thread completes with the answer.

Three things end the queue: the episode ending (:meth:`CallChannel.end`: every waiting and later request is answered
with the reason, nothing runs), the client going away (:meth:`CallChannel.disconnect`), and a client that sends
nothing for ``idle_timeout_s``. The last two end a running episode as interrupted
(:class:`~robodojo.errors.EpisodeInterrupted` from :meth:`CallChannel.next`).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from robodojo.errors import EpisodeInterrupted


@dataclass(frozen=True)
class ImagePart:
    """One encoded image of an answer."""

    mime_type: str  #: ``image/png`` or ``image/jpeg``
    data: bytes


@dataclass(frozen=True)
class Answer:
    """What goes back to the client for one request: text and image parts in order, and whether it is an error
    (nothing moved). A resource read's answer is one text part."""

    parts: tuple[str | ImagePart, ...]
    is_error: bool = False
    mime_type: str = "text/plain"  #: a resource's content type

    @classmethod
    def error(cls, text: str) -> Answer:
        return cls((text,), is_error=True)

    @property
    def text(self) -> str:
        """The text parts, one per line (for the record)."""
        return "\n".join(p for p in self.parts if isinstance(p, str))


class RequestKind(StrEnum):
    TOOL = "tool"  #: tools/call: one turn of the episode
    RESOURCE = "resource"  #: resources/read: served between turns, not counted


@dataclass(frozen=True)
class ClientRequest:
    """One request as the client sent it: ``name`` is the tool's name or the resource's URI, ``arguments`` the
    decoded JSON (anything: it is checked where it is used)."""

    kind: RequestKind
    name: str
    arguments: Any
    received_s: float  #: time.monotonic() when it arrived
    answer: Future[Answer] = field(default_factory=Future, compare=False)


def settle(future: Future[Answer], answer: Answer) -> None:
    """Answer a request unless the client cancelled it meanwhile (it no longer waits for an answer)."""
    with contextlib.suppress(InvalidStateError):
        future.set_result(answer)


_WAKE = object()  # put into the queue to wake the episode thread when the client goes away


class CallChannel:
    """The queue of client requests for one episode (see the module docstring). Thread-safe."""

    def __init__(self, *, idle_timeout_s: float, max_pending: int) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.max_pending = max_pending
        self._queue: queue.Queue[ClientRequest | object] = queue.Queue()
        self._lock = threading.Lock()
        self._pending = 0
        self._ended: str | None = None  # why the episode is over, once it is
        self._gone: str | None = None  # why the client is gone, once it is
        self._client: str | None = None
        self._hello = threading.Event()
        self._gone_event = threading.Event()
        self.last_request_s = time.monotonic()

    # -- the server's side ------------------------------------------------------------------------------------------
    def hello(self, client_name: str) -> None:
        """The client introduced itself (the first name is kept)."""
        with self._lock:
            if self._client is None:
                self._client = client_name
        self._hello.set()

    def submit(self, kind: RequestKind, name: str, arguments: Any) -> Future[Answer]:
        """Queue a request; its future is already answered when the episode is over or too many calls wait."""
        request = ClientRequest(kind, name, arguments, time.monotonic())
        with self._lock:
            self.last_request_s = request.received_s
            if self._ended is not None:
                request.answer.set_result(Answer.error(self._ended))
                return request.answer
            if self._pending >= self.max_pending:
                request.answer.set_result(
                    Answer.error(
                        f"{self._pending} requests are already waiting for the robot, which serves one at a time; "
                        "wait for their answers before sending more; nothing moved"
                    )
                )
                return request.answer
            self._pending += 1
        self._queue.put(request)
        return request.answer

    def disconnect(self, reason: str) -> None:
        """The client went away: a running episode ends as interrupted, with ``reason``."""
        with self._lock:
            if self._gone is None:
                self._gone = reason
        self._hello.set()
        self._gone_event.set()
        self._queue.put(_WAKE)

    def end(self, reason: str) -> None:
        """The episode is over: every waiting request and every later one is answered with ``reason``."""
        with self._lock:
            self._ended = reason
            waiting = []
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, ClientRequest):
                    waiting.append(item)
            self._pending = 0
        for request in waiting:
            settle(request.answer, Answer.error(reason))

    # -- the episode's side -----------------------------------------------------------------------------------------
    @property
    def gone(self) -> str | None:
        """Why the client is gone, or None while it is connected."""
        return self._gone

    @property
    def ended(self) -> bool:
        return self._ended is not None

    def wait_client(self, timeout_s: float) -> str | None:
        """The client's name once it introduced itself ("" when it gave none), or None if it went away or did not
        introduce itself within ``timeout_s``."""
        self._hello.wait(timeout_s)
        with self._lock:
            return None if self._gone is not None and self._client is None else self._client

    def wait_gone(self) -> None:
        """Return once the client is gone or has sent nothing for ``idle_timeout_s``."""
        while not self._gone_event.wait(max(0.0, self.last_request_s + self.idle_timeout_s - time.monotonic())):
            if time.monotonic() >= self.last_request_s + self.idle_timeout_s:
                return

    def poll(self, timeout_s: float) -> ClientRequest | None:
        """The next request if one comes within ``timeout_s``, else None; no idle or disconnect judgement (for a
        client whose own process the caller watches: robodojo.agents.mcp.cli_agent)."""
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if not isinstance(item, ClientRequest):
            return None
        with self._lock:
            self._pending -= 1
        return item

    def next(self) -> ClientRequest:
        """The next request, in arrival order; EpisodeInterrupted when the client is gone or silent for
        ``idle_timeout_s``."""
        while True:
            if self._gone is not None:
                raise EpisodeInterrupted(self._gone)
            left = self.last_request_s + self.idle_timeout_s - time.monotonic()
            if left <= 0:
                raise EpisodeInterrupted(f"the MCP client sent nothing for {self.idle_timeout_s:g} s")
            try:
                item = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            if isinstance(item, ClientRequest):
                with self._lock:
                    self._pending -= 1
                return item
