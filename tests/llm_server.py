"""A local OpenAI-compatible server for tests: serves recorded answers over real HTTP on loopback."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RecordedLLM:
    """Answers /v1/chat/completions with the next recorded answer; `fail_first` answers 500 that many times."""

    def __init__(self, answers: list[str], fail_first: int = 0) -> None:
        self.answers = list(answers)
        self.fail_first = fail_first
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                owner.requests.append(body)
                if owner.fail_first > 0:
                    owner.fail_first -= 1
                    self._send(500, {"error": {"message": "overloaded", "type": "server_error"}})
                    return
                text = owner.answers.pop(0) if owner.answers else "I have no more answers."
                self._send(200, {
                    "id": f"chatcmpl-{len(owner.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "test"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 100 + len(json.dumps(body)) // 4, "completion_tokens": len(text) // 4,
                              "total_tokens": 0},
                })

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> RecordedLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
