"""A fake of Prometheus' HTTP API for the cluster's signals (SPEC F2): instant queries
answered with the vectors a test sets, in Prometheus' own answer shape, over real HTTP on
127.0.0.1. The DCGM exporter's XID gauge (labels ``Hostname``, ``gpu``) and node-exporter's
interfaces gone down (labels ``instance``, ``device``); ``down`` answers 503."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class FakePrometheus:
    def __init__(self) -> None:
        self.xids: dict[tuple[str, str], int] = {}  # (node, gpu) -> the last XID code
        self.nics_down: set[tuple[str, str]] = set()  # (node, device)
        self.down = False
        self.queries: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = (parse_qs(url.query).get("query") or [""])[0]
                fake.queries.append(query)
                if fake.down or url.path != "/api/v1/query":
                    self.send_response(503 if fake.down else 404)
                    self.end_headers()
                    return
                data = json.dumps(fake.answer(query)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, query: str) -> dict:
        now = time.time()
        if "DCGM_FI_DEV_XID_ERRORS" in query:
            series = [({"Hostname": node, "gpu": gpu}, code)
                      for (node, gpu), code in sorted(self.xids.items())]  # fmt: skip
        elif "node_network_up" in query:
            series = [({"instance": f"{node}:9100", "device": device}, 0)
                      for node, device in sorted(self.nics_down)]  # fmt: skip
        else:
            series = []
        result = [{"metric": metric, "value": [now, str(value)]} for metric, value in series]
        return {"status": "success", "data": {"resultType": "vector", "result": result}}
