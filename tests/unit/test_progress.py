"""onmt.utils.progress: a tqdm bar on a terminal, plain log lines otherwise; translate.py uses it."""
import fcntl
import logging
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from helpers.paths import ROOT
from onmt.utils import progress as progress_mod
from onmt.utils.progress import progress


@pytest.fixture
def log_lines():
    """Messages the `onmt` logger emits during the test."""
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
    logger = logging.getLogger("onmt")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_not_a_terminal_logs_about_every_tenth(log_lines, monkeypatch):
    monkeypatch.setattr(progress_mod, "_on_terminal", lambda: False)
    items = list(range(100))
    assert list(progress(items, desc="work", unit="sent")) == items      # items pass through unchanged
    assert len(log_lines) == 10
    assert log_lines[0].startswith("work: 10/100 sent (10%)") and "sent/s" in log_lines[0]
    assert log_lines[-1].startswith("work: 100/100 sent (100%)")


def test_weights_manual_updates_and_unknown_totals(log_lines, monkeypatch):
    monkeypatch.setattr(progress_mod, "_on_terminal", lambda: False)
    batches = [[0] * 7, [0] * 7, [0] * 6]
    list(progress(batches, desc="t", unit="sent", total=20, weight=len, log_every=0.5))
    assert [m.split(" sent")[0] for m in log_lines] == ["t: 14/20", "t: 20/20"]
    log_lines.clear()
    with progress(5, desc="m", unit="line") as bar:                     # a total, manual updates
        for _ in range(5):
            bar.update()
    assert len(log_lines) == 5 and log_lines[-1].startswith("m: 5/5 line")
    log_lines.clear()
    list(progress(iter(range(2500)), desc="g", unit="x", log_every_n=1000))   # no len(): every N
    assert [m.split(",")[0] for m in log_lines] == ["g: 1000 x", "g: 2000 x", "g: 2500 x"]
    assert log_lines[-1].endswith("(done)")
    log_lines.clear()
    list(progress(range(50), desc="off", disable=True))
    assert log_lines == []


def test_terminal_uses_tqdm(monkeypatch, capsys):
    monkeypatch.setattr(progress_mod, "_on_terminal", lambda: True)
    for _ in progress(range(30), desc="bar", unit="sent"):
        pass
    err = capsys.readouterr().err
    assert "bar: 100%|" in err and "30/30" in err and "sent/s" in err


# --------------------------------------------------------------------------- translate.py in a child
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from helpers.checkpoints import save_tiny_checkpoint
    d = tmp_path_factory.mktemp("progress")
    ckpt = save_tiny_checkpoint(d / "m.pt", "copy")
    (d / "src.txt").write_text("".join(f"w{i % 9} w{(i * 5) % 13} w{i % 4}\n" for i in range(40)))
    return d, ckpt


def _translate_args(d, ckpt):
    return [sys.executable, os.path.join(ROOT, "translate.py"), "-model", ckpt, "-src", str(d / "src.txt"),
            "-output", str(d / "pred.txt"), "-beam_size", "2", "-max_length", "4", "-batch_size", "4"]


def _child_env():
    return dict(os.environ, OMP_NUM_THREADS="1")


def test_translate_on_a_terminal_shows_a_bar(tiny):
    d, ckpt = tiny
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))   # 24 rows, 100 columns
    proc = subprocess.Popen(_translate_args(d, ckpt), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            cwd=ROOT, env=_child_env())
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:          # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0
    text = out.decode("utf-8", "replace")
    assert "translate: 100%|" in text and "40/40" in text and "sent/s" in text
    assert "translate: 40/40 sent (100%)" not in text            # no plain progress lines


def test_translate_through_a_pipe_logs_plain_lines(tiny):
    d, ckpt = tiny
    proc = subprocess.run(_translate_args(d, ckpt), capture_output=True, text=True, cwd=ROOT, env=_child_env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "%|" not in proc.stderr and "\r" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "translate: " in ln and "sent/s" in ln]
    assert len(lines) == 10 and "translate: 40/40 sent (100%)" in lines[-1]   # 10 batches of 4


def test_a_notebook_gets_tqdms_auto_bar(monkeypatch, capsys):
    """In a Jupyter kernel stderr is no terminal, yet a bar shows (tqdm.auto: a widget with ipywidgets,
    text on stderr without); before, nothing at all was shown there."""
    import types

    class ZMQInteractiveShell:   # what get_ipython() returns in a notebook
        pass
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=ZMQInteractiveShell))
    monkeypatch.setattr(progress_mod, "_on_terminal", lambda: False)
    assert progress_mod._in_notebook()
    bar = progress(range(20), desc="nb", unit="sent")
    assert type(bar).__name__ == "_Bar"
    for _ in bar:
        pass


def test_the_api_shows_progress_through_a_pipe(tiny):
    """Summarizer.summarize(progress=True) outside a terminal: the plain progress lines on stderr."""
    d, ckpt = tiny
    code = ("from onmt import Summarizer; s = Summarizer.load(%r); "
            "s.summarize(open(%r).read().splitlines(), beam_size=2, max_length=4, batch_size=4, progress=True)"
            % (ckpt, str(d / "src.txt")))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_child_env(), cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0 and "translate: 40/40 sent (100%)" in r.stderr, r.stderr[-1000:]
