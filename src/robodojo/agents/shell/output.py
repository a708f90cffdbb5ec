"""A command's output, read from its pipe while it runs and kept bounded in memory: head and tail, the rest counted.

A sandboxed command can print without limit (``yes``): its output is never written to a file nor held whole. A
thread reads the pipe in chunks; :class:`BoundedOutput` keeps the first and the last ``keep_bytes`` bytes (the tail
a rolling buffer cut back whenever it doubles) and counts what it dropped, so the harness holds at most about
``3 * keep_bytes`` whatever the command printed.
"""

from __future__ import annotations

import os
import threading
from typing import IO

from robodojo.text import trim_text

READ_BYTES = 65536
#: bytes kept per character of the model's limit: UTF-8 needs up to 4 per character, so head and tail hold at least
#: the characters trim_text keeps even when every one is multi-byte
BYTES_PER_CHAR = 4


class BoundedOutput:
    """Bytes written in chunks; the first and last ``keep_bytes`` are kept, the rest counted."""

    def __init__(self, keep_bytes: int) -> None:
        self.keep_bytes = keep_bytes
        self._lock = threading.Lock()  # written by the reader thread, read by the episode's (a coding agent's log)
        self.head = bytearray()
        self._tail: list[bytes] = []
        self._tail_len = 0
        self.total = 0
        self.peak_held = 0  # the most bytes held at once (what the harness paid in memory)

    def write(self, chunk: bytes) -> None:
        with self._lock:
            self._write(chunk)

    def _write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail.append(chunk)
            self._tail_len += len(chunk)
            if self._tail_len > 2 * self.keep_bytes:
                kept = b"".join(self._tail)[-self.keep_bytes :]
                self._tail, self._tail_len = [kept], len(kept)
        self.peak_held = max(self.peak_held, len(self.head) + self._tail_len)

    @property
    def tail(self) -> bytes:
        return b"".join(self._tail)[-self.keep_bytes :]

    @property
    def dropped(self) -> int:
        """Bytes written but no longer held."""
        return self.total - len(self.head) - len(self.tail)

    def text(self, max_chars: int) -> str:
        """What trim_text would give for the whole output when nothing was dropped; otherwise the head and tail
        characters it keeps, with a marker counting the bytes left out."""
        with self._lock:
            return self._text(max_chars)

    def _text(self, max_chars: int) -> str:
        if not self.dropped:
            return trim_text((bytes(self.head) + self.tail).decode("utf-8", errors="replace"), max_chars)
        head_chars = max_chars // 2
        head = bytes(self.head).decode("utf-8", errors="replace")[:head_chars]
        tail_chars = max_chars - head_chars
        tail = self.tail.decode("utf-8", errors="replace")[-tail_chars:] if tail_chars else ""
        omitted = self.total - len(head.encode()) - len(tail.encode())
        return f"{head}\n[... {omitted} bytes omitted ...]\n{tail}"


class PipeReader:
    """Reads ``pipe`` to its end in a thread of its own into a :class:`BoundedOutput` of ``max_chars``."""

    def __init__(self, pipe: IO[bytes], max_chars: int) -> None:
        self.output = BoundedOutput(max_chars * BYTES_PER_CHAR)
        self._fd = pipe.fileno()
        self._pipe = pipe
        self._thread = threading.Thread(target=self._read, name="shell-output", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._fd, READ_BYTES):
                self.output.write(chunk)
        except OSError:
            pass

    def finish(self, timeout_s: float) -> BoundedOutput:
        """Wait (at most ``timeout_s``) for the pipe's end, close it and return what was read."""
        self._thread.join(timeout_s)
        if not self._thread.is_alive():
            self._pipe.close()
        return self.output
