"""Preprocessing progress (onmt/inputters/pass_progress.py): what each pass tells utils/progress.py."""
import gzip
import math
import os
import random

import pytest

from onmt.bin.preprocess import main
from onmt.inputters import pass_progress
from onmt.inputters.pass_progress import PassProgress


class Recorder:
    """Stands in for utils/progress.progress: records the total, the unit and every update."""

    def __init__(self, total, desc="", unit="it", **_):
        self.total, self.desc, self.unit, self.updates, self.closed = total, desc, unit, [], False

    def update(self, n=1):
        assert not self.closed
        self.updates.append(n)

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    made = []

    def fake_progress(total, **kw):
        made.append(Recorder(total, **kw))
        return made[-1]
    monkeypatch.setattr(pass_progress, "progress", fake_progress)
    return made


def _corpus(folder, n, gz):
    rng = random.Random(0)
    paths = []
    for name in ("src", "tgt"):
        text = "".join(" ".join(f"w{rng.randrange(5000)}" for _ in range(8)) + "\n" for _ in range(n))
        path = os.path.join(folder, f"{name}.txt" + (".gz" if gz else ""))
        with (gzip.open(path, "wt") if gz else open(path, "w")) as f:
            f.write(text)
        paths.append(path)
    return paths


@pytest.mark.parametrize("gz,threads", [(False, 1), (True, 1), (False, 2)])
def test_bars_follow_the_file_on_disk_and_the_cache(tmp_path, bars, gz, threads):
    src, tgt = _corpus(str(tmp_path), 8000, gz)            # 4 chunks of 2000 lines
    main(["-train_src", src, "-train_tgt", tgt, "-valid_src", src, "-valid_tgt", tgt,
          "-save_data", str(tmp_path / "out" / "d"), "-num_threads", str(threads)])
    count, train, valid = bars
    assert [b.desc for b in bars] == ["pass 1: counting words", "pass 2: numericalizing train",
                                      "numericalizing valid"]
    size_kb = math.ceil(os.path.getsize(src) / 1000)
    for bar in (count, valid):
        assert bar.unit == "kB" and bar.total == size_kb and bar.closed
        assert sum(bar.updates) == size_kb and all(n > 0 for n in bar.updates)
        # one move per chunk processed (not per chunk read ahead for the workers): the first is about
        # a quarter of the file, whatever the workers read ahead
        assert len(bar.updates) >= 4 and 0.15 < bar.updates[0] / size_kb < 0.4, bar.updates
    assert train.unit == "line" and train.total == 8000 and train.updates == [2000] * 4 and train.closed


def test_a_file_without_a_size_is_counted_in_lines(tmp_path, bars):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with PassProgress.of_file("pass 1", fifo, report_every=500) as bar:
        bar.read_up_to(2000, None)
        bar.done(2000)
        bar.done(3500)
    (rec,) = bars
    assert rec.unit == "line" and not rec.total and rec.updates == [2000, 1500] and rec.closed


def test_a_failed_pass_does_not_fill_the_bar(tmp_path, bars):
    path = tmp_path / "f.txt"
    path.write_text("x\n" * 5000)
    with pytest.raises(RuntimeError):
        with PassProgress.of_file("pass 1", str(path)) as bar:
            bar.read_up_to(2000, 4000)
            bar.done(2000)
            raise RuntimeError
    (rec,) = bars
    assert rec.total == 10 and rec.updates == [4] and rec.closed
