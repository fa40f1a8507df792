"""The Python API (onmt/api.py): the same summaries as translate.py, details as -attn_debug dumps."""
import subprocess
import sys

import numpy as np
import pytest

from helpers.checkpoints import save_tiny_checkpoint
from helpers.paths import ROOT
from onmt import Summarizer
from onmt.errors import OptionError

# recorded preprocessing: lowercased data, sources cut to 6 tokens, targets of at most 5 tokens
PREPROCESS = {"lower": True, "src_seq_length_trunc": 6, "tgt_seq_length": 5}
TEXTS = ["W1 w2 W9 w3 w11 w4 w5 w12 w1", "w7 w7 w3", "", "W13 w0 w2 w6 w8 w10 w3 w1 w2 w9", "w5",
         "w2 w9 w9 w4 w13 w0 w1"]
SETTINGS = [
    {},
    {"beam_size": 1},
    {"beam_size": 3, "n_best": 2},
    {"beam_size": 4, "length_penalty": "wu", "alpha": 0.8, "block_ngram_repeat": 2, "min_length": 2},
    {"beam_size": 2, "replace_unk": True, "max_length": 4, "batch_size": 2},
    {"beam_size": 3, "src_seq_length_trunc": 0, "avoid_trigram_repetition": True, "ignore_when_blocking": ["w3"]},
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("api")
    (d / "src.txt").write_text("\n".join(TEXTS) + "\n")
    ckpts = {f: save_tiny_checkpoint(d / f"{f}.pt", f, PREPROCESS, seed=4) for f in ("reinforced", "copy", "rnn")}
    return d, ckpts


def cli_args(settings):
    args = []
    for k, v in settings.items():
        if v is True:
            args.append(f"-{k}")
        elif isinstance(v, list):
            args += [f"-{k}", *v]
        else:
            args += [f"-{k}", str(v)]
    return args


def run_cli(d, ckpt, settings, *more_args):
    from onmt.bin.translate import main
    out = d / "pred.txt"
    main(["-model", ckpt, "-src", str(d / "src.txt"), "-output", str(out), *cli_args(settings), *more_args])
    return out.read_text().splitlines()


@pytest.mark.parametrize("family", ["reinforced", "copy", "rnn"])
def test_summaries_equal_translate_py(setup, family):
    d, ckpts = setup
    s = Summarizer.load(ckpts[family], device="cpu")
    words = 0
    for i, settings in enumerate(SETTINGS):
        got = s.summarize(TEXTS, **settings)          # readable text, as translate.py -detokenize writes
        n_best = settings.get("n_best", 1)
        flat = [x for g in got for x in g] if n_best > 1 else got
        assert flat == run_cli(d, ckpts[family], {**settings, "detokenize": True}), settings
        if i == 0:   # the model's tokens, as translate.py writes by default
            assert s.summarize(TEXTS, detokenize=False, **settings) == run_cli(d, ckpts[family], settings)
        assert got[2] in ("", ["", ""])                                # the empty text
        words += sum(len(x.split()) for x in flat)
    assert words > 20


def test_input_rules_apply_as_in_translate_py(setup):
    d, ckpts = setup
    s = Summarizer.load(ckpts["copy"])
    details = s.summarize(TEXTS[:1], beam_size=2, return_details=True)[0]
    assert details["src"] == "w1 w2 w9 w3 w11 w4".split()          # lowercased, cut to 6 tokens
    assert len(details["pred"]) <= 5                               # the data's target limit
    whole = s.summarize(TEXTS[:1], beam_size=2, src_seq_length_trunc=0, return_details=True)[0]
    assert len(whole["src"]) == 9
    # one string in, one string out; any whitespace (newlines included) separates words
    assert s.summarize("W1 w2\nW9  w3\tw11 w4 w5 w12 w1", beam_size=2) == details["summary"]


def test_details_are_the_attn_debug_records(setup, tmp_path):
    from onmt.translate.records import read_dump
    d, ckpts = setup
    settings = {"beam_size": 3, "n_best": 2}
    dump = tmp_path / "d.npz"
    run_cli(d, ckpts["reinforced"], settings, "-attn_debug", str(dump))
    s = Summarizer.load(ckpts["reinforced"])
    details = s.summarize(TEXTS, return_details=True, **settings)
    summaries = s.summarize(TEXTS, **settings)
    for rec, det, nbest in zip(read_dump(str(dump)), details, summaries):
        assert det["summary"] == nbest[0] and [t for t, _ in det["n_best"]] == nbest
        assert det["score"] == pytest.approx(rec["score"]) and det["n_best"][0][1] == det["score"]
        for key in ("line", "src", "pred"):
            assert det[key] == rec[key]
        for key in ("ids", "copied", "attn", "intra", "p_copy"):
            assert (det[key] is None and rec[key] is None) or np.array_equal(det[key], rec[key]), key
    assert details[2]["pred"] == [] and details[0]["intra"].shape == (len(details[0]["pred"]),) * 2


def test_bad_arguments(setup):
    _, ckpts = setup
    s = Summarizer.load(ckpts["rnn"])
    with pytest.raises(TypeError, match="beam"):
        s.summarize(["w1"], beam=3)
    with pytest.raises(TypeError, match="unknown option"):
        s.summarize(["w1"], output="x.txt")
    with pytest.raises(OptionError, match="-beam_size must be >= 1"):
        s.summarize(["w1"], beam_size=0)


def test_import_onmt_stays_cheap():
    code = ("import sys, onmt; assert 'torch' not in sys.modules, 'torch imported'; "
            "from onmt import Summarizer; assert Summarizer.__module__ == 'onmt.api'")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_the_api_raises_python_exceptions_not_system_exit(setup):
    d, ckpts = setup
    s = Summarizer.load(ckpts["copy"])
    with pytest.raises(OptionError, match="invalid choice: 'huge'"):      # a parser error, not SystemExit(2)
        s.summarize(["w1 w2"], length_penalty="huge")
    with pytest.raises(TypeError, match="beam_size must be an int, got str 'many'"):
        s.summarize(["w1 w2"], beam_size="many")
    if not __import__("torch").cuda.is_available():
        with pytest.raises(OptionError, match="device='cuda': CUDA is not available here"):
            Summarizer.load(ckpts["copy"], device="cuda")
    with pytest.raises(OptionError, match="device='gpu"):
        Summarizer.load(ckpts["copy"], device="gpu7")


def test_every_search_option_of_translate_py(setup):
    """The coverage penalty options too, with translate.py's results."""
    d, ckpts = setup
    s = Summarizer.load(ckpts["copy"])
    settings = {"beam_size": 3, "coverage_penalty": "summary", "beta": 0.5, "stepwise_penalty": True}
    out = d / "cov_pred.txt"
    from onmt.bin import translate as translate_bin
    translate_bin.main(["-model", ckpts["copy"], "-src", str(d / "src.txt"), "-output", str(out), *cli_args(settings)])
    assert s.summarize(TEXTS, detokenize=False, **settings) == out.read_text().split("\n")[:len(TEXTS)]


def test_load_leaves_the_allocator_and_the_logger_alone(setup, monkeypatch):
    """A library does not tune the process's allocator (onmt/utils/memory.py) unless asked, and
    progress=True leaves the toolkit's logger with the handlers it had."""
    from onmt.utils import memory
    from onmt.utils.logging import logger
    calls = []
    monkeypatch.setattr(memory, "reuse_freed_memory", lambda: calls.append("memory"))
    monkeypatch.setattr(logger, "handlers", [])
    d, ckpts = setup
    s = Summarizer.load(ckpts["copy"])
    assert calls == [] and logger.handlers == []
    state = (logger.level, logger.propagate)
    assert s.summarize(TEXTS[:2], progress=True) == s.summarize(TEXTS[:2])
    assert logger.handlers == [] and (logger.level, logger.propagate) == state
    list(s.summarize(iter(TEXTS), progress=True))
    assert logger.handlers == [] and (logger.level, logger.propagate) == state
    with pytest.raises(OptionError):
        Summarizer.load(ckpts["copy"], device="nonsense", reuse_freed_memory=True)
    assert calls == []
    Summarizer.load(ckpts["copy"], reuse_freed_memory=True)              # opt in: as translate.py
    assert calls == ["memory"]


def test_an_iterator_is_read_one_batch_at_a_time(setup):
    """A generator in: a generator out, which pulls batch_size texts before its first result; the same
    results, details and "line" numbers as a list."""
    _, ckpts = setup
    s = Summarizer.load(ckpts["rnn"])
    pulled = []

    def texts():
        for t in TEXTS * 3:
            pulled.append(t)
            yield t
    out = s.summarize(texts(), beam_size=2, batch_size=4)
    assert pulled == [] and not isinstance(out, list)
    first = next(out)
    assert len(pulled) == 4
    assert [first, *out] == s.summarize(TEXTS * 3, beam_size=2, batch_size=4) and len(pulled) == 18
    details = list(s.summarize(iter(TEXTS * 2), beam_size=2, batch_size=4, return_details=True))
    assert [d["line"] for d in details] == list(range(12))
    assert details[7]["summary"] == details[1]["summary"]
    with pytest.raises(TypeError, match=r"texts\[5\] is int"):
        list(s.summarize(iter(["w1", "w2", "w3", "w4", "w5", 6]), batch_size=2))


def test_arguments_of_the_wrong_type_are_a_type_error_naming_them(setup):
    _, ckpts = setup
    s = Summarizer.load(ckpts["rnn"])
    for kwargs, name in (({"beam_size": "5"}, "beam_size must be an int"), ({"n_best": True}, "n_best"),
                         ({"alpha": "0.5"}, "alpha must be a number"),
                         ({"replace_unk": 1}, "replace_unk must be a bool"),
                         ({"ignore_when_blocking": "w3"}, "ignore_when_blocking must be a list of str"),
                         ({"length_penalty": True}, "length_penalty must be a str"),
                         ({"detokenize": "yes"}, "detokenize must be a bool")):
        with pytest.raises(TypeError, match=name):
            s.summarize(["w1 w2"], **kwargs)
    assert s.summarize(["w1 w2"], alpha=1, length_penalty="wu") == s.summarize(["w1 w2"], alpha=1.0,
                                                                              length_penalty="wu")
    with pytest.raises(TypeError, match="texts must be a string or an iterable of strings, got int"):
        s.summarize(5)
    for kwargs, name in (({"precision": 16}, "precision must be a str"), ({"compile": "no"}, "compile must be a bool"),
                         ({"path": 3}, "path must be a str")):
        with pytest.raises(TypeError, match=name):
            Summarizer.load(**{"path": ckpts["rnn"], **kwargs})


def test_repr_names_the_checkpoint_family_and_device(setup):
    _, ckpts = setup
    text = repr(Summarizer.load(ckpts["copy"]))
    assert text.startswith(f"Summarizer({str(ckpts['copy'])!r}, model_family='copy', device='cpu'")


def test_raw_input_gets_the_training_texts_digit_rule(tmp_path):
    """A Gigaword model (its record: every digit written #) reads raw text's digits as # too."""
    record = {"lower": True, "text": {"tokenize": "ptb", "lower": True, "digits": "#"}}
    s = Summarizer.load(save_tiny_checkpoint(tmp_path / "g.pt", "copy", record, seed=4))
    details = s.summarize(["Bolt ran 100m in 9.58 seconds."], beam_size=2, return_details=True)[0]
    assert details["src"] == ["bolt", "ran", "###m", "in", "#.##", "seconds", "."]


# Hugging Face generate()'s names (onmt/opts/api_names.py): the same summaries as translate.py's names
HF_EQUIVALENTS = [
    ({"num_beams": 3}, {"beam_size": 3}),
    ({"num_beams": 3, "num_return_sequences": 2}, {"beam_size": 3, "n_best": 2}),
    ({"max_new_tokens": 2}, {"max_length": 2}),
    ({"min_new_tokens": 3, "max_new_tokens": 4}, {"min_length": 3, "max_length": 4}),
    ({"no_repeat_ngram_size": 1}, {"block_ngram_repeat": 1}),
    ({"do_sample": True, "num_return_sequences": 3, "seed": 5}, {"random_sampling_topk": 50, "n_best": 3, "seed": 5}),
    ({"do_sample": True, "top_k": 3, "seed": 6}, {"random_sampling_topk": 3, "seed": 6}),
    ({"do_sample": True, "top_k": 0, "top_p": 0.8}, {"random_sampling_topk": 0, "random_sampling_topp": 0.8}),
    ({"do_sample": True, "top_k": 0, "temperature": 0.6}, {"random_sampling_topk": 0, "random_sampling_temp": 0.6}),
    ({"num_beams": 4, "length_penalty": 0.7}, {"beam_size": 4, "length_penalty": "power", "alpha": 0.7}),
    ({"num_beams": 4, "length_penalty": 1.0}, {"beam_size": 4, "length_penalty": "avg"}),
    ({"num_beams": 4, "length_penalty": 0.0}, {"beam_size": 4}),
]


@pytest.mark.parametrize("family", ["reinforced", "copy"])
def test_every_hugging_face_name_gives_the_summaries_of_its_translate_py_name(setup, family):
    _, ckpts = setup
    s = Summarizer.load(ckpts[family])
    for hf, here in HF_EQUIVALENTS:
        got = [d["n_best"] for d in s.summarize(TEXTS, return_details=True, **hf)]      # (summary, score)s
        assert got == [d["n_best"] for d in s.summarize(TEXTS, return_details=True, **here)], hf
    assert s.summarize(TEXTS, max_new_tokens=2) != s.summarize(TEXTS, max_new_tokens=5)


def test_hugging_face_names_without_counterpart_are_one_line(setup):
    _, ckpts = setup
    s = Summarizer.load(ckpts["copy"])
    with pytest.raises(TypeError, match=r"repetition_penalty \(Hugging Face's\) has no counterpart here"):
        s.summarize(["w1 w2"], repetition_penalty=1.3)
    with pytest.raises(TypeError, match="num_beams .* and beam_size are one option"):
        s.summarize(["w1 w2"], num_beams=2, beam_size=2)
    with pytest.raises(ValueError, match="give do_sample=True"):
        s.summarize(["w1 w2"], temperature=0.5)
    for kwargs, match in (({"num_beams": "3"}, "num_beams must be an int, got str '3'"),
                          ({"do_sample": True, "top_k": 2.5}, "top_k must be an int"),
                          ({"do_sample": True, "temperature": "hot"}, "temperature must be a number")):
        with pytest.raises(TypeError, match=match):
            s.summarize(["w1 w2"], **kwargs)


def test_sampling_repeats_with_its_seed_and_writes_what_translate_py_writes(setup):
    d, ckpts = setup
    s = Summarizer.load(ckpts["reinforced"])
    settings = {"random_sampling_topk": 0, "random_sampling_temp": 1.5, "n_best": 3, "seed": 11}
    got = s.summarize(TEXTS, detokenize=False, **settings)
    assert got == s.summarize(TEXTS, detokenize=False, **settings)
    assert got != s.summarize(TEXTS, detokenize=False, **{**settings, "seed": 12})
    assert [x for g in got for x in g] == run_cli(d, ckpts["reinforced"], settings)
    greedy = s.summarize(TEXTS, detokenize=False, beam_size=1)
    assert s.summarize(TEXTS, detokenize=False, beam_size=1, random_sampling_topk=1, random_sampling_temp=0.5) == greedy


def test_an_iterator_s_batches_do_not_draw_the_same_samples(setup):
    _, ckpts = setup
    s = Summarizer.load(ckpts["reinforced"])
    settings = {"random_sampling_topk": 0, "random_sampling_temp": 2.0, "n_best": 4, "batch_size": 1, "seed": 3}
    texts = ["w1 w2 w3 w4 w5 w6"] * 4
    streamed = list(s.summarize(iter(texts), detokenize=False, **settings))
    assert streamed == list(s.summarize(iter(texts), detokenize=False, **settings))
    assert len({tuple(x) for x in streamed}) > 1      # each batch its own random numbers
    assert streamed[0] == s.summarize(texts[:1], detokenize=False, **settings)[0]


def test_an_ensemble_loads_from_a_list_and_writes_what_translate_py_writes(setup):
    from onmt.bin.translate import main
    d, ckpts = setup
    other = save_tiny_checkpoint(d / "copy_b.pt", "copy", PREPROCESS, seed=9)
    s = Summarizer.load([ckpts["copy"], other])
    out = d / "ens.txt"
    main(["-model", ckpts["copy"], other, "-src", str(d / "src.txt"), "-output", str(out), "-beam_size", "3"])
    assert s.summarize(TEXTS, detokenize=False, beam_size=3) == out.read_text().split("\n")[:len(TEXTS)]
    alone = Summarizer.load(ckpts["copy"]).summarize(TEXTS, detokenize=False, beam_size=3)
    assert Summarizer.load([ckpts["copy"]] * 2).summarize(TEXTS, detokenize=False, beam_size=3) == alone
    with pytest.raises(TypeError, match="path must be a str"):
        Summarizer.load([])
