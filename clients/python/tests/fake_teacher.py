"""A fake OPD teacher for the adapter's tests and slime_check.py: SGLang's
/generate, as far as a prefill for log-probs goes. Token t has log-prob
-t/scale, the first token none; every request body is kept."""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any


class FakeTeacher:
    """Serves on 127.0.0.1 (a free port) until close(); url is its /generate."""

    def __init__(self, scale: float) -> None:
        self.requests: list[dict[str, Any]] = []
        teacher = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                teacher.requests.append(body)
                ids = body["input_ids"]
                lps = [[None, ids[0], None]] + [[-t / scale, t, None] for t in ids[1:]]
                out = json.dumps({"text": "", "meta_info": {"input_token_logprobs": lps}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *a: Any) -> None:
                pass

        self._srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._srv.server_address[1]}/generate"

    def close(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()
