"""The model endpoint a sandboxed coding agent reaches: a Unix socket speaking the OpenAI chat-completions API (also
streamed), the OpenAI Responses API and the Anthropic Messages API (robodojo.agents.llm.wire), answered by the
episode's own LLM client, which holds the credential.

The coding agent inside the sandbox sends ``POST .../chat/completions``, ``.../responses`` or ``.../messages``
(through robo_shell.forward, from its loopback) with a dummy key. Each request becomes a chat-completions
:class:`ChatExchange` on :attr:`ModelProxy.pending`; the episode's thread takes it, makes the call with its
:class:`~robodojo.agents.base.LlmCaller` (the episode's LLM budget, usage and record apply as to any agent), and
hands back the upstream's response body, which goes to the agent verbatim or in its own API's form. Only those and
the model list are served; anything else is answered 404, and nothing is forwarded anywhere else: the sandbox can
reach no other host through it.
"""

from __future__ import annotations

import json
import queue
import socketserver
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from robodojo.agents.llm.wire import SERVED, WireError, wire_for

MAX_BODY_BYTES = 64 << 20  # a request with many images; larger ones are refused (413)


@dataclass
class ChatExchange:
    """One chat request of the agent, waiting for the episode thread's answer."""

    body: dict[str, Any]
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)

    def answer(self, response: dict[str, Any], status: int = 200) -> None:
        self.response, self.status = response, status
        self.done.set()


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    proxy: ModelProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away before its answer (the CLI killed at the episode's end) is no error to print."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the episode record keeps every exchange

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: Iterable[bytes]) -> None:
        data = b"".join(events)  # the whole answer is known: one body, its length said
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.proxy.model, "object": "model"}]})
        else:
            self._send(404, error_body(f"{self.path} is not served here; only {SERVED}"))

    def do_POST(self) -> None:
        wire = wire_for(self.path)
        if wire is None:
            self._send(404, error_body(f"{self.path} is not served here; only {SERVED}"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send(413, wire.error(error_body(f"request of {length} bytes; at most {MAX_BODY_BYTES}")))
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise WireError("expected a JSON object")
            exchange = ChatExchange(wire.chat_request(body))
        except (ValueError, WireError) as exc:  # JSON's errors are ValueErrors
            self._send(400, wire.error(error_body(f"not a request of this API: {exc}")))
            return
        proxy = self.server.proxy
        proxy.pending.put(exchange)
        if not exchange.done.wait(proxy.answer_timeout_s):
            self._send(504, wire.error(error_body("the episode did not answer in time", "timeout")))
            return
        if exchange.status != 200:
            self._send(exchange.status, wire.error(exchange.response))
            return
        answer = wire.answer(exchange.response, body)
        if isinstance(answer, dict):
            self._send(200, answer)
        else:
            self._send_events(answer)


class ModelProxy:
    """Serves the model endpoint on the Unix socket ``path`` in a thread of its own."""

    def __init__(self, path: Path, *, model: str = "robodojo", answer_timeout_s: float = 900.0) -> None:
        path.unlink(missing_ok=True)
        self.path = path
        self.model = model
        self.answer_timeout_s = answer_timeout_s
        self.pending: queue.Queue[ChatExchange] = queue.Queue()
        self._server = _Server(str(path), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="model_proxy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving; requests still waiting are answered 503."""
        while not self.pending.empty():
            self.pending.get_nowait().answer(error_body("the episode is over", "unavailable"), 503)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self.path.unlink(missing_ok=True)
