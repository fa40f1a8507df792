"""The server's micro-batching queue (onmt/server/batching.py) with a fake decoder, and upstream's
conf.json read into model specs (onmt/server/models.py)."""
import asyncio
import json
import threading
import time

import pytest

from onmt.errors import UserError
from onmt.server.batching import Closed, MicroBatcher, QueueFull, TimedOut


class FakeDecoder:
    """decode(lines) -> each line upper-cased, after `seconds`; records every batch."""

    def __init__(self, seconds=0.0, fail_on=None):
        self.seconds, self.fail_on, self.batches = seconds, fail_on, []
        self.threads = set()

    def __call__(self, lines):
        self.batches.append(list(lines))
        self.threads.add(threading.current_thread().name)
        time.sleep(self.seconds)
        if self.fail_on in lines:
            raise RuntimeError("boom")
        return [line.upper() for line in lines]


def run(coro):
    return asyncio.run(coro)


async def started(decoder, **kw):
    b = MicroBatcher(decoder, **kw)
    b.start()
    return b


def test_requests_that_arrive_together_are_one_batch():
    async def main():
        d = FakeDecoder()
        b = await started(d, max_lines=10, window=0.2)
        got = await asyncio.gather(*(b.submit([f"a{i}", f"b{i}"]) for i in range(4)))
        await b.drain()
        return d, b, got
    d, b, got = run(main())
    assert got == [[f"A{i}", f"B{i}"] for i in range(4)]               # each request its own lines
    assert d.batches == [["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"]]
    s = b.stats()
    assert (s["batches"], s["requests"], s["lines"], s["largest_batch_requests"]) == (1, 4, 8, 4)
    assert s["recent"] == [[4, 8]]


def test_batches_hold_at_most_max_lines_and_keep_the_order():
    async def main():
        d = FakeDecoder()
        b = await started(d, max_lines=5, window=0.2)
        got = await asyncio.gather(*(b.submit([f"x{i}"] * 2) for i in range(5)))
        big = await b.submit(["y"] * 7)                                # more than max_lines: alone
        await b.drain()
        return d, got, big
    d, got, big = run(main())
    assert [len(x) for x in d.batches] == [4, 4, 2, 7]
    assert [line for batch in d.batches[:3] for line in batch] == [f"x{i}" for i in range(5) for _ in range(2)]
    assert got == [[f"X{i}"] * 2 for i in range(5)] and big == ["Y"] * 7


def test_a_full_batch_does_not_wait_for_the_window():
    async def main():
        d = FakeDecoder()
        b = await started(d, max_lines=4, window=30.0)
        t = time.perf_counter()
        await asyncio.gather(*(b.submit(["w"]) for _ in range(4)))
        elapsed = time.perf_counter() - t
        await b.drain()
        return elapsed
    assert run(main()) < 5


def test_requests_arriving_during_a_decode_go_together_into_the_next_batch():
    async def main():
        d = FakeDecoder(seconds=0.3)
        b = await started(d, max_lines=16, window=0.0)
        first = asyncio.ensure_future(b.submit(["first"]))
        await asyncio.sleep(0.1)                                        # the first batch is decoding
        rest = [asyncio.ensure_future(b.submit([f"r{i}"])) for i in range(5)]
        await asyncio.gather(first, *rest)
        await b.drain()
        return d
    assert run(main()).batches == [["first"], [f"r{i}" for i in range(5)]]


def test_per_request_decodes_each_request_alone():
    async def main():
        d = FakeDecoder()
        b = await started(d, max_lines=16, window=0.2, per_request=True)
        await asyncio.gather(*(b.submit([f"a{i}", "b"]) for i in range(3)))
        await b.drain()
        return d
    assert run(main()).batches == [["a0", "b"], ["a1", "b"], ["a2", "b"]]


def test_a_full_queue_refuses_at_once():
    async def main():
        d = FakeDecoder()
        b = await started(d, max_lines=100, window=0.3, queue_lines=3)
        waiting = [asyncio.ensure_future(b.submit([f"q{i}"])) for i in range(3)]
        await asyncio.sleep(0)
        with pytest.raises(QueueFull, match="queue is full"):
            await b.submit(["one too many"])
        got = await asyncio.gather(*waiting)
        assert await b.submit(["again"]) == ["AGAIN"]                   # room once decoded
        await b.drain()
        return b, got
    b, got = run(main())
    assert got == [["Q0"], ["Q1"], ["Q2"]] and b.stats()["refused_full"] == 1


def test_a_timed_out_request_is_not_decoded():
    async def main():
        d = FakeDecoder(seconds=0.3)
        b = await started(d, max_lines=1, window=0.0)
        busy = asyncio.ensure_future(b.submit(["busy"]))
        await asyncio.sleep(0.05)
        with pytest.raises(TimedOut, match="within 0.1 s"):
            await b.submit(["late"], timeout=0.1)                       # still queued after 0.1 s
        await busy
        assert await b.submit(["next"], timeout=5) == ["NEXT"]
        await b.drain()
        return d, b
    d, b = run(main())
    assert d.batches == [["busy"], ["next"]] and b.stats()["timed_out"] == 1 and b.pending_lines() == 0


def test_a_failing_request_fails_alone():
    async def main():
        d = FakeDecoder(fail_on="bad")
        b = await started(d, max_lines=10, window=0.1)
        got = await asyncio.gather(b.submit(["ok"]), b.submit(["bad"]), return_exceptions=True)
        after = await b.submit(["fine"])
        await b.drain()
        return got, after
    got, after = run(main())
    assert got[0] == ["OK"] and isinstance(got[1], RuntimeError) and after == ["FINE"]


def test_drain_answers_the_queued_and_refuses_the_new():
    async def main():
        d = FakeDecoder(seconds=0.05)
        b = await started(d, max_lines=2, window=0.5)
        queued = [asyncio.ensure_future(b.submit([f"d{i}"])) for i in range(5)]
        await asyncio.sleep(0)
        draining = asyncio.ensure_future(b.drain())
        await asyncio.sleep(0)
        with pytest.raises(Closed):
            await b.submit(["new"])
        await draining
        return d, [q.result() for q in queued]
    d, got = run(main())
    assert got == [[f"D{i}"] for i in range(5)] and sum(map(len, d.batches)) == 5
    assert len(d.threads) == 1                                          # one worker thread


def test_empty_request_needs_no_decode():
    async def main():
        d = FakeDecoder()
        b = await started(d)
        got = await b.submit([])
        await b.drain()
        return d, got
    d, got = run(main())
    assert got == [] and d.batches == []


# --------------------------------------------------------------------------- conf.json
def write_conf(tmp_path, conf):
    path = tmp_path / "conf.json"
    path.write_text(conf if isinstance(conf, str) else json.dumps(conf))
    return str(path)


def test_upstream_conf_is_read(tmp_path, monkeypatch):
    from onmt.server.models import read_conf
    monkeypatch.chdir(tmp_path)       # models_root is relative to the current folder, as upstream's
    specs = read_conf(write_conf(tmp_path, {"models_root": "models", "models": [
        {"id": 100, "model": "a.pt", "timeout": 600, "on_timeout": "to_cpu", "load": True,
         "opt": {"gpu": -1, "beam_size": 5, "replace_unk": True, "verbose": False}},
        {"model": "b.pt", "model_root": "/elsewhere", "opt": {"batch_size": 8, "detokenize": True}},
        {"model": ["c.pt"]}]}))
    assert [s.id for s in specs] == [100, 1, 2]                     # upstream's free-number rule
    assert specs[0].path == str(tmp_path / "models" / "a.pt") and specs[1].path == "/elsewhere/b.pt"
    assert specs[0].search == {"beam_size": 5, "replace_unk": True}
    assert specs[0].load == {"gpu": -1, "precision": "fp32", "detokenize": False}
    assert specs[1].load["detokenize"] is True and specs[1].search == {"batch_size": 8}
    assert any("timeout" in n for n in specs[0].notes) and any("verbose" in n for n in specs[0].notes)


@pytest.mark.parametrize("conf, message", [
    ("{nope", "not valid JSON"),
    ({"models": []}, "non-empty \"models\" list"),
    ({"models": [{"id": 1}]}, "\"model\" must be one checkpoint path"),
    ({"models": [{"model": ["a.pt", "b.pt"]}]}, "\"model\" must be one checkpoint path"),
    ({"models": [{"model": "a.pt", "id": 3}, {"model": "b.pt", "id": 3}]}, "id 3 is given twice"),
    ({"models": [{"model": "a.pt", "id": "x"}]}, "\"id\" must be an integer"),
    ({"models": [{"model": "a.pt", "ct2_model": "x"}]}, "unknown key(s) ct2_model"),
    ({"models": [{"model": "a.pt", "opt": {"beam": 5}}]}, "unknown opt beam"),
    ({"models": [{"model": "a.pt", "opt": {"beam_size": "5"}}]}, "beam_size must be an int"),
    ({"models": [{"model": "a.pt", "opt": {"beam_size": 0}}]}, "beam_size"),
    ({"models": [{"model": "a.pt", "opt": {"gpu": True}}]}, "opt gpu must be int"),
])
def test_a_bad_conf_is_one_line(tmp_path, conf, message):
    from onmt.server.models import read_conf
    with pytest.raises(UserError) as e:
        read_conf(write_conf(tmp_path, conf))
    assert message in str(e.value) and "\n" not in str(e.value)


# --------------------------------------------------------------------------- options and request checks
def server_opt(*args):
    from onmt.opts import parse_with_given, server_parser, validate_server_opts
    opt = parse_with_given(server_parser(), ["-config", "conf.json", *args])
    validate_server_opts(opt)
    return opt


def test_server_options_have_upstreams_defaults():
    opt = server_opt()
    assert (opt.ip, opt.port, opt.url_root) == ("127.0.0.1", 5000, "/translator")
    assert server_opt("-port", "0", "-url_root", "/").port == 0


@pytest.mark.parametrize("args, message", [
    (["-port", "70000"], "-port"), (["-url_root", "translator"], "-url_root"),
    (["-url_root", "/a/"], "-url_root"), (["-queue_lines", "0"], "-queue_lines"),
    (["-batch_window_ms", "nan"], "-batch_window_ms"), (["-max_batch_lines", "-1"], "-max_batch_lines"),
    (["-max_request_lines", "600"], "could never be queued"),
])
def test_impossible_server_options_are_one_line(args, message):
    from onmt.opts import OptionError
    with pytest.raises(OptionError, match=message):
        server_opt(*args)


def test_request_checks():
    pytest.importorskip("aiohttp", reason="the server extra is not installed")
    from onmt.server.app import RequestError, parse_items
    opt = server_opt("-max_src_words", "3", "-max_request_lines", "2")
    items = parse_items(b'[{"src": " a\\nb\\ufeff c ", "id": 7}, {"src": ""}]', opt)
    assert list(items) == [("a b c", " a\nb\ufeff c "), ("", "")] and items.ids == [7, None]
    assert list(parse_items(b'{"src": "x"}', opt)) == [("x", "x")]          # one object: one item
    for body, status in ((b"[", 400), (b'[{"src": "a b c d"}]', 413), (b'[{"src": "a"}] ' * 1, 200),
                         (b'[{"src": "a"}, {"src": "b"}, {"src": "c"}]', 413), (b"\xff", 400),
                         (b'[{"src": ["a"]}]', 400), (b'[{"src": "a", "id": 1.5}]', 400)):
        if status == 200:
            parse_items(body, opt)
            continue
        with pytest.raises(RequestError) as e:
            parse_items(body, opt)
        assert e.value.status == status and "\n" not in str(e.value)


def test_each_model_gets_its_queue():
    pytest.importorskip("aiohttp", reason="the server extra is not installed")
    from onmt.server.serve import make_batchers

    class Model:
        batch_size = 12

        def decode(self, lines):
            return lines
    batchers = make_batchers({1: Model(), 5: Model()}, server_opt("-batch_window_ms", "20"))
    assert sorted(batchers) == [1, 5] and batchers[1] is not batchers[5]
    assert (batchers[1].max_lines, batchers[1].window, batchers[1].per_request) == (12, 0.02, False)
    assert make_batchers({1: Model()}, server_opt("-max_batch_lines", "3", "-no_request_batching"))[1].max_lines == 3


def test_without_the_extra_one_line_says_how_to_install_it(monkeypatch):
    import sys

    from onmt.bin.server import require_aiohttp
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    with pytest.raises(UserError, match=r"pip install 'onmt-reinforced\[server\]'"):
        require_aiohttp()
