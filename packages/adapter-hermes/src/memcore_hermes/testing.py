"""A loopback OpenAI-compatible chat server that drives a real Hermes ``AIAgent`` in tests.

``reply(body)`` decides each answer from the request: a string is the assistant's text, a
:class:`ToolCall` makes the model call a tool. ``/models`` and ``/api/show`` answer what
Hermes asks at start. Every request is recorded, so a test reads exactly what the agent sent
(and what the tools answered). Standard library only; it listens on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class ToolCall:
    """The model calls ``name`` with ``arguments``."""

    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)


Reply = Callable[[dict[str, Any]], "str | ToolCall"]

_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _tool_call_json(call: ToolCall, index: int) -> dict[str, Any]:
    return {
        "index": 0,
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
    }


class FakeChatServer:
    """Chat completions (streamed or not) on an ephemeral loopback port."""

    def __init__(self, reply: Reply) -> None:
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.reply = reply
        self._calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send_json(self, status: int, data: Any) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                outer.requests.append(("GET", self.path, {}))
                if self.path.rstrip("/").endswith("/models"):
                    models = [{"id": "fake-model", "object": "model"}]
                    self._send_json(200, {"object": "list", "data": models})
                else:
                    self._send_json(404, {"error": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                outer.requests.append(("POST", self.path, body))
                if self.path.endswith("/api/show"):
                    info = {"general.architecture": "llama", "llama.context_length": 131072}
                    self._send_json(200, {"model_info": info, "details": {}})
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send_json(404, {"error": "not found"})
                    return
                answer = outer.reply(body)
                if body.get("stream"):
                    self._stream(answer)
                else:
                    self._send_json(200, outer._completion(answer))

            def _stream(self, answer: str | ToolCall) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for event in outer._chunks(answer):
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _base(self) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "created": int(time.time()), "model": "fake-model"}

    def _next_call(self) -> int:
        self._calls += 1
        return self._calls

    def _completion(self, answer: str | ToolCall) -> dict[str, Any]:
        if isinstance(answer, ToolCall):
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [_tool_call_json(answer, self._next_call())],
            }
            message["tool_calls"][0].pop("index")
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": answer}, "stop"
        return {
            **self._base(),
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _USAGE,
        }

    def _chunks(self, answer: str | ToolCall) -> list[dict[str, Any]]:
        chunk = {**self._base(), "object": "chat.completion.chunk"}
        start = {"role": "assistant", "content": ""}
        if isinstance(answer, ToolCall):
            delta: dict[str, Any] = {"tool_calls": [_tool_call_json(answer, self._next_call())]}
            finish = "tool_calls"
        else:
            delta, finish = {"content": answer}, "stop"

        def event(delta: dict[str, Any], finish: str | None, **extra: Any) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {**chunk, "choices": [choice], **extra}

        return [event(start, None), event(delta, None), event({}, finish, usage=_USAGE)]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chat_requests(self) -> list[dict[str, Any]]:
        return [body for method, path, body in self.requests if path.endswith("/chat/completions")]

    def tool_results(self, name: str) -> list[str]:
        """What the agent sent back for each call of tool ``name`` (the tool's JSON answers)."""
        out: list[str] = []
        seen: set[str] = set()
        for body in self.chat_requests():
            messages = body.get("messages", [])
            calls = {
                c.get("id"): c.get("function", {}).get("name")
                for m in messages
                for c in (m.get("tool_calls") or [])
            }
            for m in messages:
                call_id = m.get("tool_call_id")
                if m.get("role") == "tool" and calls.get(call_id) == name and call_id not in seen:
                    seen.add(call_id)
                    out.append(str(m.get("content")))
        return out

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
