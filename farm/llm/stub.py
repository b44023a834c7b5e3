"""A loopback model server for tests: OpenAI chat.completions and Anthropic messages, scripted, whole or
streamed as server-sent events (`"stream": true`, see stub_sse).

    with ModelStub() as stub:
        stub.script([StubReply(tool_calls=[("tap", {"x": 1, "y": 2})]), StubReply(text="done")])
        cfg = LLMConfig(provider="openai", model="m", base_url=stub.base_url_openai)

Replies are served in order from the script; when it is empty, `responder(body)` (if given) decides,
else `default` (if given), else the stub answers 400 so a test that under-scripts fails loudly.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from farm.llm.stub_requests import count_images, tool_results, user_texts
from farm.llm.stub_sse import anthropic_stream, openai_stream, write_chunked
from farm.llm.stub_wire import (
    StubProvider,
    StubReply,
    StubUsage,
    ToolArgs,
    anthropic_body,
    error_body,
    models_body,
    openai_body,
    quota_body,
    quota_frames,
)

__all__ = ["ModelStub", "Responder", "StubReply", "StubRequest", "StubUsage", "ToolArgs", "tool_results", "user_texts"]


@dataclass
class StubRequest:
    """One request the stub received."""

    provider: StubProvider
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def tool_results(self) -> list[str]:
        """Texts of every tool result in the request's conversation, in order."""
        return tool_results(self.body)

    def user_texts(self) -> list[str]:
        """Texts of the user messages (tool results excluded), in order."""
        return user_texts(self.body)

    def image_count(self) -> int:
        """Number of images anywhere in the conversation (image parts, tool results included)."""
        return count_images(self.body.get("messages", []))


Responder = Callable[[dict[str, Any]], StubReply]


class ModelStub:
    """Threaded HTTP server on 127.0.0.1 (free port) speaking both model APIs."""

    def __init__(
        self, *, responder: Responder | None = None, default: StubReply | None = None, api_key: str | None = None,
        models_reply: StubReply | None = None,
    ) -> None:
        self.responder = responder
        self.default = default
        self.api_key = api_key
        """When set, a request carrying another key is answered 401, as a provider does."""
        self.models_reply = models_reply
        """When set, `GET /v1/models` is answered with this error reply (a quota refusal, a 5xx) instead of the list."""
        self.model_lists = 0
        """`GET /v1/models` requests served (a run's preflight makes one)."""
        self._queue: deque[StubReply] = deque()
        self._requests: list[StubRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ModelStub:
        """Bind a free loopback port and serve in a daemon thread."""
        if self._server is not None:
            return self
        stub = self

        class Handler(_Handler):
            owner = stub

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="model-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still sleeping in `delay_s` are cut short."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> ModelStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("ModelStub is not started")
        return int(self._server.server_address[1])

    @property
    def base_url_openai(self) -> str:
        """`base_url` for the openai SDK (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def base_url_anthropic(self) -> str:
        """`base_url` for the anthropic SDK (the SDK appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, provider: StubProvider) -> str:
        """The base_url for `provider`."""
        return self.base_url_openai if provider == "openai" else self.base_url_anthropic

    # -- scripting and inspection ----------------------------------------------------------
    def script(self, replies: Iterable[StubReply]) -> None:
        """Append replies to the queue (served first-in first-out)."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not served yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[StubRequest]:
        """Every request received so far (a copy), in arrival order."""
        with self._lock:
            return list(self._requests)

    def _next_reply(self, request: StubRequest) -> StubReply | None:
        with self._lock:
            self._requests.append(request)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(request.body)
        return self.default

    # -- rendering -------------------------------------------------------------------------
    def _render_stream(self, provider: StubProvider, body: dict[str, Any], reply: StubReply) -> list[bytes]:
        n = next(self._ids)
        model = str(body.get("model", "stub-model"))
        if provider == "openai":
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return openai_stream(n, model, reply, include_usage=include_usage)
        return anthropic_stream(n, model, reply)

    def _render(self, provider: StubProvider, body: dict[str, Any], reply: StubReply) -> dict[str, Any]:
        n = next(self._ids)
        model = str(body.get("model", "stub-model"))
        if provider == "openai":
            return openai_body(n, model, reply)
        return anthropic_body(n, model, reply)


class _Handler(BaseHTTPRequestHandler):
    owner: ModelStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # keep test output clean

    def _key_refused(self, provider: StubProvider) -> bool:
        """Answer 401 when the stub checks keys and this request's key is not the one."""
        expected = self.owner.api_key
        if expected is None:
            return False
        given = self.headers.get("x-api-key") or self.headers.get("authorization", "").removeprefix("Bearer ")
        if given == expected:
            return False
        self._send(401, error_body(provider, 401, "model stub: invalid API key"))
        return True

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        path = self.path.split("?", 1)[0]
        provider: StubProvider = "anthropic" if self.headers.get("anthropic-version") else "openai"
        if not path.endswith("/v1/models"):
            self._send(404, error_body(provider, 404, f"model stub: no route {path}"))
            return
        if self._key_refused(provider):
            return
        with self.owner._lock:
            self.owner.model_lists += 1
        refusal = self.owner.models_reply
        if refusal is not None and refusal.quota_code is not None:
            self._send(refusal.status, quota_body(provider, 0, "stub-model", refusal))
        elif refusal is not None:
            self._send(refusal.status, error_body(provider, refusal.status, refusal.error_message))
        else:
            self._send(200, models_body(provider))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        path = self.path.split("?", 1)[0]
        provider: StubProvider | None = None
        if path.endswith("/chat/completions"):
            provider = "openai"
        elif path.endswith("/v1/messages"):
            provider = "anthropic"
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if provider is None:
            self._send(404, {"error": {"message": f"model stub: no route {path}"}})
            return
        if self._key_refused(provider):
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, error_body(provider, 400, "model stub: request body is not JSON"))
            return
        request = StubRequest(provider, path, {k.lower(): v for k, v in self.headers.items()}, body)
        reply = self.owner._next_reply(request)
        if reply is None:
            self._send(400, error_body(provider, 400, "model stub: no scripted reply left"))
            return
        if reply.delay_s > 0 and self.owner._stopping.wait(reply.delay_s):
            # Hang up rather than leave the client waiting for a reply that will never come.
            self.close_connection = True
            return
        headers = dict(reply.headers)
        if reply.retry_after is not None:
            headers["retry-after"] = str(reply.retry_after)
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body, headers, content_type=reply.content_type)
        elif reply.quota_code is not None:
            n, model = next(self.owner._ids), str(body.get("model", "stub-model"))
            if reply.quota_event and body.get("stream") and reply.status == 200:
                self._stream(quota_frames(provider, n, model, reply), reply, headers)
            else:
                self._send(reply.status, quota_body(provider, n, model, reply), headers)
        elif reply.status != 200:
            self._send(reply.status, error_body(provider, reply.status, reply.error_message), headers)
        elif body.get("stream"):
            self._stream(self.owner._render_stream(provider, body, reply), reply, headers)
        else:
            self._send(200, self.owner._render(provider, body, reply), headers)

    def _stream(self, frames: list[bytes], reply: StubReply, headers: dict[str, str]) -> None:
        """Send `frames` as a chunked event stream (see `write_chunked`)."""
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("cache-control", "no-cache")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if not write_chunked(self.wfile, frames, reply, self.owner._stopping):
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(
        self,
        status: int,
        payload: dict[str, Any] | bytes,
        headers: dict[str, str] | None = None,
        *,
        content_type: str = "application/json",
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to deliver
