"""No command writes over its own inputs, by any spelling or link: each case is one line, a non-zero exit,
and the input byte for byte as it was (issue: "Nothing lost, ever")."""
import os

import pytest

from helpers.hostile import TINY
from onmt.bin import evaluate as evaluate_bin
from onmt.bin import preprocess as preprocess_bin
from onmt.bin import train as train_bin
from onmt.bin import translate as translate_bin
from onmt.utils.cli import run_main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from helpers.e2e import random_pair_data, torch_threads
    folder = tmp_path_factory.mktemp("noloss")
    prefix = random_pair_data(str(folder), seed=3, n_examples=24, max_len=6, target=lambda w: w[:3])
    with torch_threads(1):
        run_main(train_bin.main, ["-data", prefix, "-save_model", str(folder / "m"), *TINY, "-train_steps", "1",
                                  "-valid_steps", "0"])
    return {"prefix": prefix, "ckpt": str(folder / "m_step_1.pt"), "src": str(folder / "src.txt"),
            "folder": folder}


def _refused(capsys, main, argv, *kept):
    """`main(argv)` stops in one line naming the clash, and every file of `kept` is unchanged."""
    before = {p: open(p, "rb").read() for p in kept}
    with pytest.raises(SystemExit) as exc:
        run_main(main, argv)
    assert exc.value.code not in (0, None)
    err = capsys.readouterr().err
    assert "Traceback" not in err and ("would destroy the input" in err or "would replace" in err), err
    for p, data in before.items():
        assert open(p, "rb").read() == data, p
    return err.strip().splitlines()[-1]


def _spellings(tmp_path, target):
    """The same file as `target` by another spelling, a symbolic link and a hard link."""
    sym, hard = tmp_path / "sym", tmp_path / "hard"
    os.symlink(target, sym)
    os.link(target, hard)
    other = os.path.join(os.path.dirname(target), ".", os.path.basename(target))
    return [target, other, str(sym), str(hard)]


@pytest.mark.parametrize("spelling", range(4))
def test_translate_output_is_never_the_model(capsys, tiny, tmp_path, spelling):
    out = _spellings(tmp_path, tiny["ckpt"])[spelling]
    err = _refused(capsys, translate_bin.main, ["-model", tiny["ckpt"], "-src", tiny["src"], "-output", out],
                   tiny["ckpt"])
    assert "-output" in err and "-model" in err


@pytest.mark.parametrize("option, input_option", [("-output", "-src"), ("-output", "-tgt"), ("-attn_debug", "-model"),
                                                  ("-dump_beam", "-src"), ("-log_file", "-src"),
                                                  ("-log_file", "-model")])
def test_translate_outputs_are_never_inputs(capsys, tiny, tmp_path, option, input_option):
    tgt = tmp_path / "tgt.txt"
    tgt.write_text(open(tiny["src"]).read())
    inputs = {"-model": tiny["ckpt"], "-src": tiny["src"], "-tgt": str(tgt)}
    argv = ["-model", tiny["ckpt"], "-src", tiny["src"], "-tgt", str(tgt), "-output", str(tmp_path / "pred.txt")]
    argv += [option, inputs[input_option]]
    err = _refused(capsys, translate_bin.main, argv, *inputs.values())
    assert option in err and input_option in err
    assert not (tmp_path / "pred.txt").exists()


def test_evaluate_json_is_never_a_reference(capsys, tmp_path):
    (tmp_path / "p.txt").write_text("a b\n")
    (tmp_path / "r.txt").write_text("a c\n")
    err = _refused(capsys, evaluate_bin.main, ["-pred", str(tmp_path / "p.txt"), "-ref", str(tmp_path / "r.txt"),
                                                "-json", str(tmp_path / "r.txt")], tmp_path / "r.txt")
    assert "-json" in err and "-ref" in err


def test_preprocess_never_replaces_its_inputs(capsys, tmp_path):
    src, tgt = tmp_path / "train.src.txt", tmp_path / "train.tgt.txt"
    src.write_text("a b c\nb c d\n")
    tgt.write_text("a b\nb c\n")
    vocab = tmp_path / "data.vocab.txt"          # the file -save_data data writes
    vocab.write_text("a\nb\nc\nd\n")
    base = ["-train_src", str(src), "-train_tgt", str(tgt), "-share_vocab", "-dynamic_dict"]
    err = _refused(capsys, preprocess_bin.main, [*base, "-save_data", str(tmp_path / "data"), "-src_vocab", str(vocab)],
                   vocab, src, tgt)
    assert "-save_data" in err and "-src_vocab" in err
    err = _refused(capsys, preprocess_bin.main, [*base, "-save_data", str(tmp_path / "other"), "-log_file", str(src)],
                   src, tgt)
    assert "-log_file" in err and "-train_src" in err


def test_train_never_writes_over_its_inputs(capsys, tiny, tmp_path):
    base = ["-data", tiny["prefix"], "-save_model", str(tmp_path / "r"), *TINY, "-train_steps", "2"]
    err = _refused(capsys, train_bin.main, [*base, "-train_from", tiny["ckpt"], "-log_file", tiny["ckpt"]],
                   tiny["ckpt"])
    assert "-log_file" in err and "-train_from" in err
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dropout: 0.1\n")
    err = _refused(capsys, train_bin.main, [*base, "-config", str(cfg), "-save_config", str(cfg)], cfg)
    assert "-save_config" in err and "-config" in err
    for part in (".vocab.txt", ".train.0.pt"):     # no file of the dataset takes the log's lines
        err = _refused(capsys, train_bin.main, [*base, "-log_file", tiny["prefix"] + part], tiny["prefix"] + part)
        assert "-log_file" in err and "-data" in err


# --------------------------------------------------------------------------- checkpoints of other runs
def _train(tiny, save, *more):
    train_bin.main(["-data", tiny["prefix"], "-save_model", str(save), *TINY, "-valid_steps", "0", *more])


def test_resuming_an_earlier_step_never_overwrites_the_later_checkpoints(tiny, tmp_path):
    from onmt.errors import UserError
    _train(tiny, tmp_path / "m", "-train_steps", "6", "-save_checkpoint_steps", "2")
    later = {n: (tmp_path / n).read_bytes() for n in ("m_step_4.pt", "m_step_6.pt")}
    with pytest.raises(UserError, match=r"-save_model .*m already holds m_step_4.pt, m_step_6.pt beyond the resumed "
                                        r"step 2"):
        _train(tiny, tmp_path / "m", "-train_steps", "8", "-train_from", str(tmp_path / "m_step_2.pt"))
    assert all((tmp_path / n).read_bytes() == b for n, b in later.items())
    # the same resume into another prefix is fine; so is going on from the last step
    _train(tiny, tmp_path / "branch", "-train_steps", "4", "-train_from", str(tmp_path / "m_step_2.pt"))
    _train(tiny, tmp_path / "m", "-train_steps", "8", "-train_from", str(tmp_path / "m_step_6.pt"))
    assert (tmp_path / "m_step_8.pt").exists()


def test_a_fresh_run_never_overwrites_an_earlier_runs_checkpoints(tiny, tmp_path):
    from onmt.errors import UserError
    _train(tiny, tmp_path / "m", "-train_steps", "2")
    before = (tmp_path / "m_step_2.pt").read_bytes()
    with pytest.raises(UserError, match="already holds m_step_2.pt of an earlier run"):
        _train(tiny, tmp_path / "m", "-train_steps", "2", "-seed", "9")
    assert (tmp_path / "m_step_2.pt").read_bytes() == before


def test_keep_checkpoint_counts_the_checkpoints_written_before_a_resume(tiny, tmp_path):
    _train(tiny, tmp_path / "k", "-train_steps", "4", "-save_checkpoint_steps", "1", "-keep_checkpoint", "2")
    assert sorted(p.name for p in tmp_path.glob("k_step_*.pt")) == ["k_step_3.pt", "k_step_4.pt"]
    _train(tiny, tmp_path / "k", "-train_steps", "7", "-save_checkpoint_steps", "1", "-keep_checkpoint", "2",
           "-train_from", str(tmp_path / "k_step_4.pt"))
    assert sorted(p.name for p in tmp_path.glob("k_step_*.pt")) == ["k_step_6.pt", "k_step_7.pt"]


def test_a_resume_from_another_working_directory_deletes_nothing_it_did_not_write(tiny, tmp_path, monkeypatch):
    """A run in x/ with -save_model runs/k and -keep_checkpoint 2, resumed from y/ with the same relative
    -save_model: the experiment already in y/runs keeps its files; the resumed run prunes only its own."""
    for d in ("x", "y"):
        (tmp_path / d / "runs").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "x")
    _train(tiny, "runs/k", "-train_steps", "4", "-save_checkpoint_steps", "1", "-keep_checkpoint", "2")
    others = {}
    for step in (3, 4, 5):                         # another experiment's files in y/runs, same names
        others[step] = tmp_path / "y" / "runs" / f"k_step_{step}.pt"
        others[step].write_bytes(f"other {step}".encode())
    monkeypatch.chdir(tmp_path / "y")
    (tmp_path / "y" / "runs" / "k_step_5.pt").unlink()
    del others[5]
    _train(tiny, "runs/k", "-train_steps", "7", "-save_checkpoint_steps", "1", "-keep_checkpoint", "2",
           "-train_from", str(tmp_path / "x" / "runs" / "k_step_4.pt"))
    assert all(p.read_bytes() == f"other {s}".encode() for s, p in others.items())
    assert sorted(p.name for p in (tmp_path / "y" / "runs").glob("k_step_*.pt")) == \
        ["k_step_3.pt", "k_step_4.pt", "k_step_6.pt", "k_step_7.pt"]
    assert sorted(p.name for p in (tmp_path / "x" / "runs").glob("k_step_*.pt")) == ["k_step_3.pt", "k_step_4.pt"]


def test_a_second_writer_of_the_same_prefix_is_refused_and_a_stale_lock_taken_over(tiny, tmp_path):
    import subprocess
    import sys

    from onmt.errors import UserError
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "m.lock").write_text(f"{other.pid}\n")
        with pytest.raises(UserError, match=f"-save_model .*m: another run \\(process {other.pid}\\) is writing"):
            _train(tiny, tmp_path / "m", "-train_steps", "1")
        assert not list(tmp_path.glob("m_step_*.pt"))
    finally:
        other.kill()
        other.wait()
    _train(tiny, tmp_path / "m", "-train_steps", "1")      # its process is gone: the lock is stale
    assert (tmp_path / "m_step_1.pt").exists() and not (tmp_path / "m.lock").exists()


# --------------------------------------------------------------------------- preprocessing's swap and lock
def _corpus(folder, words="w1 w2 w3"):
    folder.mkdir(exist_ok=True)
    (folder / "s.txt").write_text(f"{words}\nw2 w3\n")
    (folder / "t.txt").write_text("w1\nw3\n")
    return ["-train_src", str(folder / "s.txt"), "-train_tgt", str(folder / "t.txt"), "-share_vocab",
            "-dynamic_dict"]


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_a_signal_inside_the_dataset_swap_waits_until_it_is_done(tmp_path, monkeypatch, signum):
    """The signal lands as the swap starts (before its first rename, as a ^C could): the swap completes,
    then the signal stops the run; the new dataset is whole, never neither."""
    import signal

    from onmt.bin.preprocess import _terminate
    from onmt.inputters import dataset_swap as prep
    from onmt.inputters.vocab_builder import load_vocabs
    save = str(tmp_path / "p" / "d")
    preprocess_bin.main([*_corpus(tmp_path / "a"), "-save_data", save])
    real = prep._swap

    def swap_with_a_signal(stage, save_data):
        os.kill(os.getpid(), getattr(signal, signum))
        return real(stage, save_data)
    monkeypatch.setattr(prep, "_swap", swap_with_a_signal)
    previous = signal.signal(signal.SIGTERM, _terminate)   # as preprocess.py's main sets it in a shell
    try:
        with pytest.raises(KeyboardInterrupt):
            preprocess_bin.main([*_corpus(tmp_path / "b", "w7 w8 w9"), "-save_data", save])
    finally:
        signal.signal(signal.SIGTERM, previous)
    vocabs, meta = load_vocabs(save)
    assert "w7" in vocabs.src.itos   # the new dataset, complete
    assert not list((tmp_path / "p").glob(".d.staging*")) and not (tmp_path / "p" / "d.lock").exists()


def test_a_second_preprocessing_of_the_same_prefix_is_refused(tmp_path):
    import subprocess
    import sys

    from onmt.errors import UserError
    (tmp_path / "p").mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "p" / "d.lock").write_text(f"{other.pid}\n")
        with pytest.raises(UserError, match=f"-save_data .*d: another run \\(process {other.pid}\\)"):
            preprocess_bin.main([*_corpus(tmp_path / "a"), "-save_data", str(tmp_path / "p" / "d")])
        assert not (tmp_path / "p" / "d.meta.json").exists()
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("signum, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_preprocessing_with_workers_stops_on_a_signal_with_its_status(tmp_path, signum, code):
    """-num_threads 2: the signal is never lost (it was, when it landed while the workers started: exit 0);
    the status says which one came, in one line, and the previous dataset (none here) is left as it was."""
    import signal
    import subprocess
    import sys
    import time

    from helpers.paths import ROOT
    lines = [" ".join(f"w{(i * 7 + j) % 997}" for j in range(40)) for i in range(60000)]
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "t.txt").write_text("\n".join(line[:20] for line in lines) + "\n")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "preprocess.py"), "-train_src", str(tmp_path / "s.txt"),
                             "-train_tgt", str(tmp_path / "t.txt"), "-save_data", str(tmp_path / "p" / "d"),
                             "-num_threads", "2", "-src_seq_length", "100"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = ""
    while "pass 1" not in out and proc.poll() is None:   # the workers are starting or at work
        out += proc.stdout.readline()
    time.sleep(0.05)
    proc.send_signal(getattr(signal, signum))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (proc.returncode, err)
    assert "Traceback" not in err and "Exception ignored" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "p" / "d.meta.json").exists() and not list((tmp_path / "p").glob(".d.staging*"))


@pytest.mark.parametrize("moves_before_the_kill", [0, 1, 2])
def test_a_swap_killed_midway_is_finished_by_the_next_reader(tmp_path, monkeypatch, moves_before_the_kill):
    """SIGKILL cannot be deferred: a run killed inside its swap leaves no meta.json at the prefix. Its
    staging folder (manifest and meta.json) lets the next reader or preprocessing run finish the swap:
    the new dataset, complete."""
    from onmt.inputters import dataset_swap
    from onmt.inputters.vocab_builder import load_vocabs
    save = tmp_path / "p" / "d"
    preprocess_bin.main([*_corpus(tmp_path / "a"), "-save_data", str(save)])
    real_replace, real_swap, moves, swapping = os.replace, dataset_swap._swap, [], []

    class Killed(BaseException):
        pass

    def replace(a, b):
        if swapping:
            if len(moves) >= moves_before_the_kill:
                raise Killed
            moves.append(b)
        return real_replace(a, b)

    def swap(stage, save_data):
        swapping.append(1)
        return real_swap(stage, save_data)
    monkeypatch.setattr(dataset_swap.os, "replace", replace)
    monkeypatch.setattr(dataset_swap, "_swap", swap)
    monkeypatch.setattr("shutil.rmtree", lambda *a, **k: None)     # a killed process cleans nothing up
    with pytest.raises(Killed):
        preprocess_bin.main([*_corpus(tmp_path / "b", "w7 w8 w9"), "-save_data", str(save)])
    monkeypatch.undo()
    (stage,) = (tmp_path / "p").glob(".d.staging*")
    os.rename(stage, tmp_path / "p" / ".d.staging999999999")      # its process is gone
    (tmp_path / "p" / "d.lock").unlink(missing_ok=True)
    assert not (tmp_path / "p" / "d.meta.json").exists()
    vocabs, _ = load_vocabs(str(save))
    assert "w7" in vocabs.src.itos and not list((tmp_path / "p").glob(".d.staging*"))
