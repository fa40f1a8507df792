"""onmt_server (onmt/server/) started as a subprocess on port 0: the same words as translate.py for the
same lines and options, upstream's JSON, one-line 4xx for hostile requests, concurrent requests batched
together, a full queue refused, and a graceful drain on SIGTERM."""
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from helpers.checkpoints import save_tiny_checkpoint
from helpers.paths import ROOT

needs_aiohttp = pytest.mark.skipif(importlib.util.find_spec("aiohttp") is None,
                                   reason="the server extra is not installed (pip install '.[server]')")
PREPROCESS = {"lower": True, "src_seq_length_trunc": 6, "tgt_seq_length": 5}
TEXTS = ["W1 w2 W9 w3 w11 w4 w5 w12 w1", "w7 w7 w3", "", "W13 w0 w2 w6 w8 w10 w3 w1 w2 w9", "w5",
         "w2 w9 w9 w4 w13 w0 w1", "w3 w3 w12 w1", "w0 w8 w8 w2 w5 w6"]
# id -> (family, the model's opt in conf.json)
MODELS = {100: ("copy", {"beam_size": 3}),
          101: ("reinforced", {}),
          102: ("rnn", {"beam_size": 2, "n_best": 2, "length_penalty": "wu", "alpha": 0.5}),
          103: ("copy", {"beam_size": 2, "detokenize": True})}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("server")
    (d / "src.txt").write_text("\n".join(TEXTS) + "\n")
    for family in {f for f, _ in MODELS.values()}:
        save_tiny_checkpoint(d / f"{family}.pt", family, PREPROCESS, seed=4)
    conf = {"models_root": ".", "models": [
        {"id": i, "model": f"{family}.pt", "timeout": 600, "opt": opt} for i, (family, opt) in MODELS.items()]}
    (d / "conf.json").write_text(json.dumps(conf))
    return d


class Server:
    """A running onmt_server subprocess."""

    def __init__(self, folder, *args):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
        self.proc = subprocess.Popen([sys.executable, "-m", "onmt.bin.server", "-config", str(folder / "conf.json"),
                                      "-port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=str(folder))
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            pytest.fail(f"the server did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.rsplit(" ", 1)[1].strip()

    def post(self, body, path="/translate"):
        """(status, the answer's JSON)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self._open(urllib.request.Request(self.url + path, data=data, method="POST"))

    def get(self, path):
        return self._open(urllib.request.Request(self.url + path))

    @staticmethod
    def _open(request):
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            assert text.count("\n") == 0 and "Traceback" not in text, text
            return e.code, json.loads(text)

    def stop(self, signalled=False):
        """SIGTERM (unless `signalled`: sent before), the exit; (exit status, stderr)."""
        if not signalled:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err


@pytest.fixture(scope="module")
def server(models):
    s = Server(models)
    yield s
    code, err = s.stop()
    assert code == 0, err
    assert "Traceback" not in err, err


def translate_py(folder, opt, *more):
    """translate.py's lines for TEXTS with a model's conf.json opt."""
    from onmt.bin.translate import main
    args = []
    for k, v in opt.items():
        args += [f"-{k}"] if v is True else [f"-{k}", str(v)]
    out = folder / "pred.txt"
    family = next(f for f, o in MODELS.values() if o is opt)
    main(["-model", str(folder / f"{family}.pt"), "-src", str(folder / "src.txt"), "-output", str(out), *args, *more])
    return out.read_text().splitlines()


def flat_tgt(answer):
    """translate.py's order: the n_best of each line one after the other."""
    return [answer[k][i]["tgt"] for i in range(len(answer[0])) for k in range(len(answer))]


@needs_aiohttp
@pytest.mark.parametrize("model_id", sorted(MODELS))
def test_same_words_as_translate_py(server, models, model_id):
    opt = MODELS[model_id][1]
    status, answer = server.post([{"src": t, "id": model_id} for t in TEXTS])
    assert status == 200
    n_best = opt.get("n_best", 1)
    assert len(answer) == n_best and all(len(rank) == len(TEXTS) for rank in answer)
    assert [a["src"] for a in answer[0]] == TEXTS
    assert all(a["n_best"] == n_best and isinstance(a["pred_score"], float) for rank in answer for a in rank)
    expected = translate_py(models, opt)
    assert flat_tgt(answer) == expected
    assert sum(len(x.split()) for x in expected) > 10
    # one line a request, decoded alone: translate.py -batch_size 1
    alone = translate_py(models, opt, "-batch_size", "1")
    for i, text in enumerate(TEXTS):
        status, answer = server.post([{"src": text, "id": model_id}])
        assert status == 200 and flat_tgt(answer) == alone[i * n_best:(i + 1) * n_best]


@needs_aiohttp
def test_upstream_routes(server):
    status, listed = server.get("/models")
    assert status == 200 and [m["model_id"] for m in listed] == sorted(MODELS)
    assert listed[0]["opt"]["beam_size"] == 3 and listed[0]["loaded"] is True
    status, health = server.get("/health")
    assert status == 200 and health["status"] == "ok" and set(health["models"]) == {str(i) for i in MODELS}
    # no id: the first model of the conf
    assert server.post([{"src": TEXTS[0]}])[1] == server.post([{"src": TEXTS[0], "id": 100}])[1]


HOSTILE = [
    (b'[{"src": "w1 w2', 400), (b"", 400), (b"\xff\xfe\x00", 400), (b"[" * 100000, 400), (b'"w1"', 400),
    (b"[1, 2]", 400), (b'[{"id": 100}]', 400), (b'[{"src": 5}]', 400), (b'[{"src": "a\\u0000b"}]', 400),
    (b'[{"src": "a\\ud800b"}]', 400), (b'[{"src": "w1", "id": "100"}]', 400), (b'[{"src": "w1", "id": true}]', 400),
    (b'[{"src": "w1", "id": 100}, {"src": "w2", "id": 101}]', 400), (b'[{"src": "w1", "id": 7}]', 404),
    (json.dumps([{"src": "w1 " * 20000}]).encode(), 413), (json.dumps([{"src": "w1"}] * 100).encode(), 413),
    (b"a" * (2 << 20), 413), (json.dumps({"src": 1e999}).encode(), 400),
]


@needs_aiohttp
def test_hostile_requests_get_one_line_4xx(server):
    for body, want in HOSTILE:
        status, answer = server.post(body)
        assert (status, answer["status"]) == (want, "error"), (body[:60], answer)
        assert answer["error"] and "\n" not in answer["error"]
    for path, want in (("/nothing", 404), ("/translate", 405)):
        status, answer = server.get(path)
        assert status == want and answer["status"] == "error"
    # not HTTP: aiohttp's parser answers 400 (logged in one line, no traceback: the fixture checks)
    host, port = server.url.split("//")[1].split("/")[0].rsplit(":", 1)
    for raw in (b"GARBAGE\r\n\r\n", b"POST /translator/translate HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                b"GET /translator/health HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n"):
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(raw)
            assert sock.recv(100).startswith(b"HTTP/1.0 400"), raw[:30]
    assert server.post([{"src": TEXTS[0]}])[0] == 200      # still serving


def post_together(server, bodies):
    """Send every body at once from its own thread; the (status, answer) of each, in order."""
    out = [None] * len(bodies)

    def send(i):
        out[i] = server.post(bodies[i])
    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


@needs_aiohttp
def test_concurrent_requests_are_batched(models):
    s = Server(models, "-batch_window_ms", "300")
    try:
        got = post_together(s, [[{"src": t, "id": 100}] for t in TEXTS])
        _, health = s.get("/health")
    finally:
        code, err = s.stop()
    assert code == 0 and "Traceback" not in err, err
    assert all(status == 200 for status, _ in got)
    stats = health["models"]["100"]
    # 8 requests of one line each, decoded in fewer batches than requests
    assert stats["requests"] == len(TEXTS) and stats["batches"] < len(TEXTS), stats
    assert stats["largest_batch_requests"] > 1, stats
    assert [a[0][0]["tgt"] for _, a in got] == translate_py(models, MODELS[100][1])


@needs_aiohttp
def test_full_queue_refused_then_drained_on_sigterm(models):
    s = Server(models, "-batch_window_ms", "1500", "-queue_lines", "4", "-max_request_lines", "2")
    try:
        bodies = [[{"src": t, "id": 102}] for t in TEXTS[:6]]
        results = [None]

        def send_all():
            results[0] = post_together(s, bodies)
        sender = threading.Thread(target=send_all)
        sender.start()
        deadline = time.time() + 20   # 4 lines queued (the batch window holds them), 2 refused
        while time.time() < deadline:
            stats = s.get("/health")[1]["models"]["102"]
            if stats["queued_lines"] == 4 and stats["refused_full"] == 2:
                break
            time.sleep(0.05)
        s.proc.send_signal(signal.SIGTERM)    # inside the window: the queued requests are still waiting
        sender.join(60)
        code, err = s.stop(signalled=True)
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
    statuses = [status for status, _ in results[0]]
    assert sorted(statuses) == [200] * 4 + [503] * 2, (statuses, err)
    refused = [a for status, a in results[0] if status == 503]
    assert all("queue is full" in a["error"] for a in refused)
    assert code == 0 and "draining" in err and "Traceback" not in err, err
    with pytest.raises(urllib.error.URLError):       # no longer listening
        urllib.request.urlopen(s.url + "/health", timeout=5)


def test_missing_extra_is_one_line(models):
    code = ("import sys; sys.modules['aiohttp'] = None; sys.argv = ['onmt_server', '-config', 'conf.json']; "
            "from onmt.bin.server import cli; cli()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(models),
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "pip install 'onmt-reinforced[server]'" in r.stderr


@needs_aiohttp
def test_time_limit_is_a_503_and_the_lines_are_not_decoded(models):
    s = Server(models, "-batch_window_ms", "2000", "-request_timeout", "0.3")
    try:
        status, answer = s.post([{"src": TEXTS[0], "id": 100}])
        time.sleep(2.5)                                   # the window over: the batch would have started
        stats = s.get("/health")[1]["models"]["100"]
    finally:
        code, err = s.stop()
    assert status == 503 and "not answered within 0.3 s" in answer["error"], answer
    assert (stats["timed_out"], stats["batches"], stats["queued_lines"]) == (1, 0, 0), stats
    assert code == 0 and "Traceback" not in err, err
    # the port taken: one line
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        r = subprocess.run([sys.executable, "-m", "onmt.bin.server", "-config", str(models / "conf.json"), "-port",
                            str(busy.getsockname()[1])], capture_output=True, text=True, timeout=120,
                           cwd=str(models), env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT))
    finally:
        busy.close()
    assert r.returncode == 1 and "cannot listen on 127.0.0.1" in r.stderr and "Traceback" not in r.stderr, r.stderr
