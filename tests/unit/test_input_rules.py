"""translate.py prepares test input as preprocessing prepared the training data (onmt/translate/input_rules.py)."""
import argparse

import pytest
import torch

from helpers.models import make_opt
from helpers.toy_models import toy_vocabs
from onmt import opts
from onmt.opts import saved_options
from onmt.translate import input_rules
from onmt.translate.input_rules import prepare_lines

VOCABS = toy_vocabs(n_src_words=14, n_tgt_words=6)
CNNDM = {"lower": True, "src_seq_length_trunc": 800, "tgt_seq_length_trunc": 100,
         "src_seq_length": 100000, "tgt_seq_length": 100000}


def topt(*args):
    return opts.parse_with_given(opts.translate_parser(), ["-model", "m.pt", "-src", "s.txt", *args])


def model_opt(**kw):
    """A checkpoint's model options (one written before -model_family: the family of its aliases)."""
    opt = argparse.Namespace(**{"reinforced": False, "copy_attn": True, **kw})
    opts.update_saved_model_opts(opt)
    return opt


def resolve(opt, model_opt, preprocess):
    """What translate.py does (session.translate_lines): the options resolved for the checkpoint, then
    the input rules; the notes in the log's order."""
    run, option_notes = opts.resolve_translate_run(opt, model_opt, preprocess,
                                                   input_rules.data_target_limit(preprocess))
    rules, notes = input_rules.resolve(run, preprocess)
    return rules, notes + option_notes


def test_cnndm_record_applies_lower_truncation_and_length():
    rules, notes = resolve(topt("-tgt", "t.txt"), model_opt(), CNNDM)
    assert rules.lower and rules.src_trunc == 800 and rules.tgt_trunc == 100 and rules.max_length == 100
    assert rules.block_ngram_repeat == 0
    text = "\n".join(notes)
    assert "lowercasing" in text and "truncated to 800" in text and "stop at 100" in text


def test_explicit_options_win():
    rules, notes = resolve(topt("-src_seq_length_trunc", "0", "-max_length", "30"), model_opt(), CNNDM)
    assert rules.src_trunc == 0 and rules.max_length == 30
    assert any("not truncated" in n for n in notes)
    rules, _ = resolve(topt("-src_seq_length_trunc", "400"), model_opt(), CNNDM)
    assert rules.src_trunc == 400


def test_target_limit_from_filter_and_no_limit():
    rules, _ = resolve(topt(), model_opt(), {"tgt_seq_length": 40, "tgt_seq_length_trunc": 0})
    assert rules.max_length == 40
    rules, notes = resolve(topt(), model_opt(), {"tgt_seq_length": 100000})
    assert rules.max_length == 100 and any("default" in n for n in notes)


def test_old_checkpoint_changes_nothing_and_says_so():
    rules, notes = resolve(topt(), model_opt(), None)
    assert not rules.lower and rules.src_trunc == 0 and rules.max_length == 100
    assert "no record" in notes[0]


def test_reinforced_blocks_trigrams_unless_told():
    rules, notes = resolve(topt(), model_opt(reinforced=True), CNNDM)
    assert rules.block_ngram_repeat == 3 and any("reinforced model's test-time rule" in n for n in notes)
    for args in (["-block_ngram_repeat", "0"], ["-block_ngram_repeat", "2"]):
        o = topt(*args)
        rules, notes = resolve(o, model_opt(reinforced=True), CNNDM)
        assert rules.block_ngram_repeat == int(args[1]) and any("given" in n for n in notes)
    o = topt("-avoid_trigram_repetition")
    opts.update_translate_opts(o)
    opts.validate_translate_opts(o)
    assert resolve(o, model_opt(), CNNDM)[0].block_ngram_repeat == 3


def test_prepare_lines():
    assert prepare_lines(["A B C", "", "d"], lower=True, trunc=2) == ["a b", "", "d"]
    lines = ["A B"]
    assert prepare_lines(lines) is lines


# --------------------------------------------------------------------------- through translate.py
def save_checkpoint(path, preprocess):
    from onmt.model_builder import build_model
    opt = make_opt(copy_attn=True, brnn=True, global_attention="mlp", param_init=0.5)
    torch.manual_seed(0)
    model = build_model(opt, VOCABS)
    ckpt = {"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0}
    if preprocess is not None:
        ckpt["preprocess"] = preprocess
    torch.save(ckpt, path)
    return str(path)


@pytest.fixture
def seen(monkeypatch):
    """What the model is given: the source and target lines and every batch's source lengths."""
    import onmt.inputters.dataset as dataset
    real, out = dataset.text_batches, {"lengths": [], "src": [], "tgt": []}

    def spy(src_lines, tgt_lines, *a, **kw):
        out["src"] += list(src_lines)
        out["tgt"] += list(tgt_lines or [])
        for b in real(src_lines, tgt_lines, *a, **kw):
            out["lengths"] += b.src_lengths.tolist()
            yield b
    monkeypatch.setattr(dataset, "text_batches", spy)
    return out


def translate(tmp_path, *args):
    """translate.py's main; returns its log."""
    from onmt.bin.translate import main
    log = tmp_path / "translate.log"
    main([*map(str, args), "-output", str(tmp_path / "p.txt"), "-log_file", str(log)])
    return log.read_text()


def test_1000_token_source_is_seen_as_800_tokens(tmp_path, seen):
    ckpt = save_checkpoint(tmp_path / "m.pt", dict(CNNDM, lower=False))
    (tmp_path / "src.txt").write_text(" ".join(f"w{i % 10}" for i in range(1000)) + "\nw1 w2\n")
    log = translate(tmp_path, "-model", ckpt, "-src", tmp_path / "src.txt", "-beam_size", "2", "-max_length", "3")
    assert sorted(seen["lengths"]) == [2, 800]
    assert log.count("-src truncated to 800 tokens") == 1
    seen["lengths"].clear()
    log = translate(tmp_path, "-model", ckpt, "-src", tmp_path / "src.txt", "-beam_size", "2", "-max_length", "3",
                    "-src_seq_length_trunc", "0")
    assert sorted(seen["lengths"]) == [2, 1000] and "-src not truncated (-src_seq_length_trunc 0)" in log


def test_lowercased_data_lowercases_src_and_reports_rouge(tmp_path, seen):
    ckpt = save_checkpoint(tmp_path / "m.pt", {"lower": True, "tgt_seq_length": 50})
    (tmp_path / "src.txt").write_text("W1 W2 w3\n")
    (tmp_path / "tgt.txt").write_text("W1 w2\n")
    log = translate(tmp_path, "-model", ckpt, "-src", tmp_path / "src.txt", "-tgt", tmp_path / "tgt.txt",
                    "-beam_size", "2", "-report_rouge")
    # the source (translation) and the source + target (gold scoring) both arrive lowercased
    assert seen["src"] == ["w1 w2 w3", "w1 w2 w3"] and seen["tgt"] == ["w1 w2"]
    assert "lowercasing" in log and "stop at 50 tokens" in log
    assert "ROUGE (P/R/F1) against -tgt" in log and "ROUGE-Lsum" in log


def test_checkpoint_without_record_translates_as_given(tmp_path, seen):
    ckpt = save_checkpoint(tmp_path / "m.pt", None)
    (tmp_path / "src.txt").write_text("W1 w2 w3\n")
    log = translate(tmp_path, "-model", ckpt, "-src", tmp_path / "src.txt", "-beam_size", "1")
    assert seen["src"] == ["W1 w2 w3"] and "no record of its preprocessing" in log


def test_digits_are_written_hash_where_the_training_text_was():
    """Gigaword's text writes every digit #: a record with "digits": "#" gives raw input the same."""
    gigaword = {"lower": False, "text": {"tokenize": "ptb", "lower": True, "digits": "#"}}
    rules, notes = resolve(topt(), model_opt(), gigaword)
    assert rules.mask_digits and rules.lower and rules.tokenize
    assert any("digits" in n and "#.##" in n for n in notes)
    line = "Bolt ran 100m in 9.58 seconds in 2009."
    assert prepare_lines([line], rules.lower, 0, rules.tokenize, rules.mask_digits) == \
        ["bolt ran ###m in #.## seconds in #### ."]
    rules, _ = resolve(topt(), model_opt(), {"text": {"tokenize": "ptb", "lower": True}})    # CNN/DM: digits kept
    assert not rules.mask_digits
    assert prepare_lines([line], True, 0, True, rules.mask_digits) == ["bolt ran 100m in 9.58 seconds in 2009 ."]


def test_a_beam_search_without_a_length_penalty_says_none_is_not_upstream_s_default():
    """Upstream OpenNMT-py (avg) and Hugging Face (1.0) normalize by length by default; here none: a run whose
    flags do not name -length_penalty is told so, once."""
    _, notes = resolve(topt(), model_opt(), CNNDM)
    assert sum("length penalty: none, this toolkit's default" in n and "-length_penalty avg" in n for n in notes) == 1
    for args in (["-length_penalty", "none"], ["-length_penalty", "avg"], ["-beam_size", "1"]):
        _, notes = resolve(topt(*args), model_opt(), CNNDM)
        assert not any("length penalty" in n for n in notes), args
