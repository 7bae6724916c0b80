"""A small server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests.

Replies are scripted per test (status, body, headers, delay); by default a `responder` callback
turns the request into the assistant's content. Every request body is recorded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # assistant message content for a 200 completion
    raw_body: str | None = None  # sent verbatim instead of a completion
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def completion(model: str, content: str, prompt_tokens: int = 11, completion_tokens: int = 7) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class FakeOpenAIServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], str] = lambda req: "{}"
        # A reply chosen from the request itself (say, a fault for one passage), before the script.
        self.fault: Callable[[dict[str, Any]], Reply | None] = lambda req: None
        self.tokenize = False  # offer vLLM's /tokenize (OpenAI itself has none)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _stream(self, model: str, content: str) -> None:
                """Server-sent events: one chunk per word, then a usage chunk, then [DONE]."""
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                words = content.split(" ")
                for i, word in enumerate(words):
                    delta = {"content": word + (" " if i < len(words) - 1 else "")}
                    if i == 0:
                        delta["role"] = "assistant"  # as OpenAI sends it, in the first chunk
                    chunk = {
                        "id": "c",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                done = {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                }
                usage = {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": 50, "completion_tokens": len(words), "total_tokens": 50 + len(words)},
                }
                for final in (done, usage):
                    self.wfile.write(f"data: {json.dumps(final)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _embeddings(self, body: dict[str, Any]) -> None:
                """Deterministic bag-of-words vectors: texts sharing words get similar embeddings."""
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = []
                for i, text in enumerate(texts):
                    vec = [0.0] * 256
                    for word in str(text).lower().split():
                        vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
                    if body.get("encoding_format") == "base64":
                        value: Any = base64.b64encode(struct.pack(f"{len(vec)}f", *vec)).decode()
                    else:
                        value = vec
                    data.append({"object": "embedding", "index": i, "embedding": value})
                payload = json.dumps(
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model"),
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path.endswith("/embeddings"):
                    self._embeddings(body)
                    return
                if self.path == "/tokenize" and server.tokenize:  # vLLM's endpoint: one token per word here
                    payload = json.dumps(
                        {"count": len(str(body.get("prompt", "")).split()), "max_model_len": 8192}
                    ).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                reply = server.fault(body) or (server.script.popleft() if server.script else Reply())
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if body.get("stream") and reply.status == 200 and reply.raw_body is None:
                    content = reply.content if reply.content is not None else server.responder(body)
                    self._stream(body.get("model", "?"), content)
                    return
                if reply.raw_body is not None:
                    payload = reply.raw_body.encode()
                elif reply.status == 200:
                    content = reply.content if reply.content is not None else server.responder(body)
                    payload = json.dumps(completion(body.get("model", "?"), content)).encode()
                else:
                    payload = json.dumps(
                        {"error": {"message": f"scripted {reply.status}", "type": "server_error"}}
                    ).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def minimal_instance(schema: dict[str, Any]) -> Any:
    """A small value valid against `schema`: first enum value, 'text', 0, False, [], objects filled."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {name: minimal_instance(prop) for name, prop in schema.get("properties", {}).items()}
    if kind == "array":
        return [minimal_instance(schema.get("items", {"type": "string"}))] if schema.get("minItems") else []
    return {"string": "text", "integer": 0, "number": 0, "boolean": False}.get(kind, None)


def schema_responder(request: dict[str, Any]) -> str:
    """Answer any structured-output request with a minimal valid JSON object."""
    schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {"type": "object"})
    return json.dumps(minimal_instance(schema))
