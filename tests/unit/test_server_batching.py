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


def test_upstream_conf_is_read(tmp_path):
    from onmt.server.models import read_conf
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
