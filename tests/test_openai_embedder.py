"""The OpenAI-compatible embedding provider against a local test server (the only fake: an external endpoint)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from engramdb.embed.openai import OpenAIEmbedder
from engramdb.errors import EmbedderUnavailable


class _Handler(BaseHTTPRequestHandler):
    calls: list[dict] = []
    fail_next = 0

    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if type(self).fail_next:
            type(self).fail_next -= 1
            self.send_response(503)
            self.end_headers()
            return
        if body.get("model") == "forbidden":
            self.send_response(400)
            self.end_headers()
            return
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture()
def server():
    _Handler.calls = []
    _Handler.fail_next = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_batches_order_and_normalisation(server):
    emb = OpenAIEmbedder("m", base_url=server, api_key="k", batch_size=2)
    assert emb.dim == 3 and emb.name == "openai/m"
    vectors = emb.embed_documents(["a", "bbb", "cc"])
    expected = np.array([[1, 1, 0], [3, 1, 0], [2, 1, 0]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)
    posts = [c for c in _Handler.calls if c["body"]["input"] != ["dimension probe"]]
    assert [c["body"]["input"] for c in posts] == [["a", "bbb"], ["cc"]]
    assert all(c["path"] == "/v1/embeddings" and c["auth"] == "Bearer k" for c in posts)


def test_retries_server_errors_then_succeeds(server):
    emb = OpenAIEmbedder("m", base_url=server, dim=3, retries=3)
    _Handler.fail_next = 2
    assert emb.embed_query("xy").shape == (3,)
    assert len(_Handler.calls) == 3


def test_client_error_is_not_retried(server):
    with pytest.raises(EmbedderUnavailable, match="400"):
        OpenAIEmbedder("forbidden", base_url=server, retries=3)
    assert len(_Handler.calls) == 1
