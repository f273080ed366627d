"""A small local fake of the chat-completions API on 127.0.0.1, for the model-backed tests.

Extraction: every user sentence that is not a question becomes a fact. Review: every action
is kept with confidence 0.95 (or dropped, with ``drop_all``); a MERGE gets a fixed text.
``mode`` ``garbage`` answers text that is not JSON, ``error`` answers HTTP 500.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memcore.extraction import EXTRACT_PROMPT


class FakeChat:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.mode = "ok"
        self.drop_all = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions" or fake.mode == "error":
                    self.send_response(500 if fake.mode == "error" else 404)
                    self.end_headers()
                    return
                content = "not json at all" if fake.mode == "garbage" else fake.answer(body)
                data = json.dumps(
                    {
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}}
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> str:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if system == EXTRACT_PROMPT:
            facts = []
            for line in user.splitlines():
                if line.startswith("user: "):
                    for sentence in re.split(r"(?<=[.!?])\s+", line[6:]):
                        if sentence.strip() and not sentence.strip().endswith("?"):
                            facts.append(sentence.strip())
            return json.dumps({"facts": facts})
        verdicts = []
        for line in user.splitlines():
            index = int(line[1 : line.index("]")])
            verdict: dict[str, Any] = {
                "index": index,
                "keep": not self.drop_all,
                "confidence": 0.95,
            }
            if "] MERGE" in line:
                verdict["text"] = "The user likes green tea (checked)"
            verdicts.append(verdict)
        return json.dumps({"actions": verdicts})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
