"""Options: every parser takes its options from a YAML -config too; validation in one place."""
import re

import pytest

from helpers.models import train_opt
from onmt import opts
from onmt.errors import OptionError


def test_yaml_config_sets_flags_and_values(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("share_vocab: true\ndynamic_dict: true\nsrc_vocab_size: 400\nshard_size: 7\n")
    opt = opts.preprocess_parser().parse_args(["-config", str(cfg), "-train_src", "a", "-train_tgt", "b",
                                               "-save_data", "p"])
    assert opt.share_vocab and opt.dynamic_dict and opt.src_vocab_size == 400 and opt.shard_size == 7


def test_command_line_overrides_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("reinforced: true\nrnn_size: 400\nlearning_rate: 0.001\n")
    opt = opts.train_parser().parse_args(["-config", str(cfg), "-data", "d", "-rnn_size", "64"])
    assert opt.reinforced and opt.rnn_size == 64 and opt.learning_rate == 0.001
    opts.update_model_opts(opt)
    opts.validate_model_opts(opt)
    assert opt.copy_attn and opt.share_embeddings  # implied by -reinforced


@pytest.mark.parametrize("name", ["cnndm_reinforced", "gigaword_reinforced", "demo_train"])
def test_shipped_train_configs_parse(name):
    opt = opts.train_parser().parse_args(["-config", f"config/{name}.yaml", "-data", "d"])
    opts.update_model_opts(opt)
    opts.update_train_opts(opt)
    opts.validate_model_opts(opt)
    opts.validate_train_opts(opt)
    assert opt.reinforced


def test_paper_sizes_in_cnndm_config():
    opt = opts.train_parser().parse_args(["-config", "config/cnndm_reinforced.yaml", "-data", "d"])
    assert (opt.word_vec_size, opt.rnn_size, opt.brnn, opt.scheduled_sampling) == (100, 400, True, 0.25)
    assert opt.optim == "adam" and opt.learning_rate == 0.001
    p = opts.preprocess_parser().parse_args(["-config", "config/cnndm_preprocess.yaml", "-train_src", "a",
                                             "-train_tgt", "b", "-save_data", "p"])
    assert (p.src_vocab_size, p.tgt_vocab_size, p.src_seq_length_trunc, p.tgt_seq_length_trunc) == \
        (150000, 50000, 800, 100)


def test_validation_errors_name_the_option():
    opt = opts.translate_parser().parse_args(["-model", "m", "-src", "s", "-beam_size", "2", "-n_best", "3"])
    with pytest.raises(OptionError, match="-n_best"):
        opts.validate_translate_opts(opt)
    opt = opts.translate_parser().parse_args(["-model", "m", "-src", "s", "-avoid_trigram_repetition"])
    opts.update_translate_opts(opt)
    opts.validate_translate_opts(opt)
    assert opt.block_ngram_repeat == 3
    opt = opts.train_parser().parse_args(["-data", "d", "-scheduled_sampling", "1.5"])
    with pytest.raises(OptionError, match="-scheduled_sampling"):
        opts.validate_model_opts(opt)


_train_opt = train_opt


@pytest.mark.parametrize("args, named", [
    (["-reinforced", "-rnn_type", "GRU"], "-rnn_type GRU"),
    (["-reinforced", "-global_attention", "dot"], "-global_attention dot"),
    (["-reinforced", "-global_attention", "general"], "-global_attention general"),
    (["-reinforced", "-input_feed", "0"], "-input_feed 0"),
    (["-reinforced", "-coverage_attn"], "-coverage_attn"),
    (["-reinforced", "-enc_layers", "1", "-dec_layers", "2"], "-enc_layers 1 -dec_layers 2"),
    (["-scheduled_sampling", "0.25"], "-scheduled_sampling"),
    (["-scheduled_sampling_mode", "sample"], "-scheduled_sampling_mode"),
    (["-no_temporal_attn"], "-no_temporal_attn"),
    (["-no_intra_decoder_attn"], "-no_intra_decoder_attn"),
    (["-intra_attn_scale", "sqrt"], "-intra_attn_scale"),
    (["-no_tied_output", "-copy_attn"], "-no_tied_output"),
    (["-copy_attn", "-lambda_coverage", "2"], "-lambda_coverage"),
    (["-rl_gamma", "1.5"], "-rl_gamma"),
    (["-reset_optim", "all"], "-reset_optim all needs -train_from"),
])
def test_options_a_model_cannot_honour_are_refused(args, named):
    with pytest.raises(OptionError) as e:
        _train_opt(*args)
    assert named in str(e.value) and "\n" not in str(e.value)


def test_reinforced_alone_is_the_papers_structure():
    opt = _train_opt("-reinforced")
    assert opt.brnn and opt.rnn_type == "LSTM" and opt.enc_layers == opt.dec_layers == 1
    assert opt.copy_attn and opt.share_embeddings
    assert _train_opt("-reinforced", "-layers", "2").enc_layers == 2
    # defaults are not "given": the same options pass when they come from the defaults
    assert _train_opt("-reinforced", "-input_feed", "1").reinforced
    # and the paper's recipe where nothing was given: sizes, Adam 1e-3, batch 50, dropout 0; but no
    # scheduled sampling (the paper's 0.25 costs ROUGE on CNN/DM: docs/results.md), reported as a difference
    assert (opt.word_vec_size, opt.rnn_size, opt.dropout, opt.scheduled_sampling) == (100, 400, 0.0, 0.0)
    # and scores scaled by 1/sqrt(H) (the paper is silent; unscaled spikes: docs/user-guide.md, Sanity tasks)
    assert opt.intra_attn_scale == "sqrt"
    assert _train_opt("-reinforced", "-intra_attn_scale", "none").intra_attn_scale == "none"
    assert (opt.optim, opt.learning_rate, opt.batch_size) == ("adam", 0.001, 50)
    assert opts.paper_differences(opt) == ["-scheduled_sampling 0.0 (paper: 0.25)"]
    assert opts.paper_differences(_train_opt("-config", "config/cnndm_reinforced.yaml")) == []
    # what the user gives wins, and is reported as a difference
    mine = _train_opt("-reinforced", "-optim", "sgd", "-rnn_size", "500", "-batch_size", "32", "-dropout", "0.3")
    assert (mine.optim, mine.rnn_size, mine.batch_size, mine.dropout) == ("sgd", 500, 32, 0.3)
    assert mine.learning_rate == 0.001 and mine.word_vec_size == 100
    diffs = opts.paper_differences(mine)
    assert any(d.startswith("-optim sgd") for d in diffs) and any("-rnn_size 500" in d for d in diffs)
    assert any("-batch_size 32 (paper: 50)" in d for d in diffs)
    # the other families keep OpenNMT-py's defaults
    plain = _train_opt("-copy_attn")
    assert (plain.optim, plain.learning_rate, plain.batch_size, plain.rnn_size) == ("sgd", 1.0, 64, 500)


def test_early_stopping_options():
    opt = _train_opt("-early_stopping", "3")
    assert opt.early_stopping == 3 and opt.early_stopping_criteria == ["ppl"] and opt.valid_rouge is None
    opt = _train_opt("-early_stopping_criteria", "rougeL", "ppl")
    assert opt.early_stopping_criteria == ["rougeL", "ppl"] and opt.valid_rouge is True
    # the mixed objective raises the perplexity by design: its best checkpoint is its best ROUGE-L
    assert _train_opt("-reinforced", "-rl_gamma", "0.9984").early_stopping_criteria == ["rougeL"]
    assert _train_opt("-reinforced", "-rl_gamma", "0").early_stopping_criteria == ["ppl"]
    assert _train_opt("-reinforced", "-rl_gamma", "1", "-no_valid_rouge").early_stopping_criteria == ["ppl"]
    assert _train_opt("-reinforced", "-rl_gamma", "0.9", "-early_stopping_criteria", "ppl").early_stopping_criteria \
        == ["ppl"]


@pytest.mark.parametrize("argv, message", [
    (["-early_stopping", "-1"], "-early_stopping must be >= 0"),
    (["-early_stopping_criteria", "rougeL", "-no_valid_rouge"], "-early_stopping_criteria rougeL needs"),
    (["-train_time_limit", "-5"], "-train_time_limit must be >= 0"),
    (["-copy_attn", "-copy_loss_by_seqlength", "-rl_gamma", "0.9"], "-copy_loss_by_seqlength with -rl_gamma"),
    (["-valid_steps", "-5"], "-valid_steps must be >= 0"),
    (["-save_checkpoint_steps", "-1"], "-save_checkpoint_steps must be >= 0"),
    (["-keep_checkpoint", "-2"], "-keep_checkpoint must be -1 (keep all), 0 or positive"),
    (["-valid_steps", "0", "-early_stopping", "3"], "-early_stopping 3 needs validation"),
    (["-reinforced", "-rl_normalization", "tokens"], "-rl_normalization scales the mixed objective's"),
    (["-reinforced", "-rl_normalization", "tokens", "-rl_gamma", "0"], "-rl_normalization scales the mixed"),
])
def test_training_option_refusals(argv, message):
    with pytest.raises(OptionError, match=re.escape(message)):
        _train_opt(*argv)


def test_given_tracks_command_line_and_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("optim: adam\n")
    opt = opts.parse_with_given(opts.train_parser(), ["-config", str(cfg), "-data", "d", "-learning_rate", "0.1"])
    assert opts.given(opt, "optim") and opts.given(opt, "learning_rate") and not opts.given(opt, "batch_size")
    assert "_given" not in opts.saved_options(opt)


# --------------------------------------------------------------------------- exact option names
def _unknown(capsys, parser, argv):
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_prefix_of_an_option_is_not_that_option(capsys):
    """argparse matched single-dash prefixes even with allow_abbrev=False: -src_vocab became
    -src_vocab_size (upstream's -src_vocab is a vocabulary file, an option of its own now)."""
    err = _unknown(capsys, opts.preprocess_parser(), ["-train_src", "a", "-train_tgt", "b", "-save_data", "c",
                                                      "-src_vocab_s", "10"])
    assert "unknown option -src_vocab_s" in err and "-src_vocab_size" in err


def test_upstream_option_names_what_it_is_here(capsys):
    err = _unknown(capsys, opts.train_parser(), ["-data", "d", "-enc_hid_size", "512"])
    assert "unknown option -enc_hid_size: OpenNMT-py's -enc_hid_size is -rnn_size here" in err
    err = _unknown(capsys, opts.translate_parser(), ["-model", "m", "-src", "s", "-ratio", "0.5"])
    assert "-ratio has no counterpart here" in err
    err = _unknown(capsys, opts.train_parser(), ["-data", "d", "-save_format", "safetensors"])
    assert "-save_format has no counterpart here (training checkpoints are PyTorch files" in err
    err = _unknown(capsys, opts.translate_parser(), ["-model", "m", "-src", "s", "-model_dtype", "fp16"])
    assert "OpenNMT-py's -model_dtype is -precision here" in err


def test_misspelt_option_gets_the_closest_names(capsys):
    err = _unknown(capsys, opts.translate_parser(), ["-model", "m", "-src", "s", "-beam", "5"])
    assert "unknown option -beam (did you mean " in err and "-beam_size" in err.rsplit("did you mean", 1)[1]


def test_exact_names_still_parse_values_and_configs(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rnn_size: 64\n")
    opt = opts.train_parser().parse_args(["-config", str(cfg), "-data", "d", "-gpu", "-1", "--seed=7",
                                          "-learning_rate", "-0.001"])
    assert (opt.rnn_size, opt.gpu, opt.seed, opt.learning_rate) == (64, -1, 7, -0.001)


# --------------------------------------------------------------------------- update, then validate
def _parsed(parser, argv, update):
    opt = opts.parse_with_given(parser, argv)
    update(opt)
    return opt


VALID_SETS = {
    "model": [(opts.train_parser, ["-data", "d"]),
              (opts.train_parser, ["-data", "d", "-reinforced"]),
              (opts.train_parser, ["-data", "d", "-reinforced", "-encoder_type", "brnn", "-hidden_size", "64"]),
              (opts.train_parser, ["-data", "d", "-layers", "3", "-brnn", "-copy_attn", "-coverage_attn"]),
              (opts.train_parser, ["-data", "d", "-encoder_type", "rnn", "-copy_attn", "-copy_attn_type", "general",
                                   "-reuse_copy_attn", "-share_decoder_embeddings", "-hidden_size", "500"]),
              (opts.train_parser, ["-data", "d", "-config", "config/cnndm_reinforced.yaml"])],
    "train": [(opts.train_parser, ["-data", "d"]),
              (opts.train_parser, ["-data", "d", "-decay_method", "noam", "-warmup_steps", "10"]),
              (opts.train_parser, ["-data", "d", "-learning_rate_decay", "0.5", "-rl_gamma", "0.9"])],
    "translate": [(opts.translate_parser, ["-model", "m", "-src", "s"]),
                  (opts.translate_parser, ["-model", "m", "-src", "s", "-avoid_trigram_repetition", "-beam_size", "3",
                                           "-n_best", "2", "-coverage_penalty", "wu", "-beta", "0.2"])],
    "preprocess": [(opts.preprocess_parser, ["-train_src", "a", "-train_tgt", "b", "-save_data", "p", "-share_vocab",
                                             "-dynamic_dict", "-valid_src", "c", "-valid_tgt", "d"])],
    "evaluate": [(opts.evaluate_parser, ["-pred", "p", "-ref", "r1", "r2", "-sentence_split", " . "])],
    "prepare": [(opts.prepare_cnndm_parser, ["-input", "i", "-output", "o", "-splits", "test", "train", "test"])],
    "plot_attention": [(opts.plot_attention_parser, ["-attn_debug", "d.npz", "-attn_plot", "p"])],
}
UPDATE = {name: getattr(opts, f"update_{name}_opts") for name in VALID_SETS}
VALIDATE = {name: getattr(opts, f"validate_{name}_opts") for name in VALID_SETS}


@pytest.mark.parametrize("group", sorted(VALID_SETS))
def test_validation_never_changes_the_options(group):
    """What an option implies is the update step's (update.py); a check leaves `opt` as it is, updated
    or not (an -avoid_trigram_repetition still to resolve stays unresolved)."""
    import copy
    for parser, argv in VALID_SETS[group]:
        for update in (UPDATE[group], lambda opt: None):
            opt = _parsed(parser(), argv, update)
            before = copy.deepcopy(vars(opt))
            VALIDATE[group](opt)
            assert vars(opt) == before, (group, argv)
            if group == "model":   # the same options validate for a train.py run (start, then the model)
                opts.update_train_opts(opt)
                before = copy.deepcopy(vars(opt))
                opts.validate_train_opts(opt)
                assert vars(opt) == before


def test_update_resolves_implications_and_runs_again_unchanged():
    import copy
    opt = _parsed(opts.train_parser(), ["-data", "d", "-reinforced"], opts.update_model_opts)
    assert opt.brnn and opt.copy_attn and opt.share_embeddings and (opt.layers, opt.enc_layers) == (1, 1)
    assert _parsed(opts.train_parser(), ["-data", "d", "-layers", "3"], opts.update_model_opts).dec_layers == 3
    t = _parsed(opts.translate_parser(), ["-model", "m", "-src", "s", "-avoid_trigram_repetition"],
                opts.update_translate_opts)
    assert t.block_ngram_repeat == 3
    e = _parsed(opts.evaluate_parser(), ["-pred", "p", "-ref", "r", "-sentence_split", " . "],
                opts.update_evaluate_opts)
    assert e.sentence_split == "."
    p = _parsed(opts.prepare_cnndm_parser(), ["-input", "i", "-output", "o", "-splits", "test", "train", "test"],
                opts.update_prepare_opts)
    assert p.splits == ["test", "train"]
    for group, sets in VALID_SETS.items():
        for parser, argv in sets:
            opt = _parsed(parser(), argv, UPDATE[group])
            once = copy.deepcopy(vars(opt))
            UPDATE[group](opt)
            assert vars(opt) == once, (group, argv)


@pytest.mark.parametrize("declare, parser, required", [
    (opts.model_opts, opts.train_parser, {"data": "d"}),
    (opts.train_opts, opts.train_parser, {"data": "d"}),
    (opts.translate_opts, opts.translate_parser, {"model": ["m"], "src": "s"}),
    (opts.preprocess_opts, opts.preprocess_parser, {"train_src": "a", "train_tgt": "b", "save_data": "p"}),
])
def test_defaults_filled_in_are_the_parsers(declare, parser, required):
    """An option a namespace lacks gets the default a parse gives it."""
    import argparse
    parsed = vars(parser().parse_args([x for k, v in required.items()
                                       for x in (f"-{k}", *(v if isinstance(v, list) else [v]))]))
    made = argparse.Namespace(**required)
    opts.fill_defaults(made, declare)
    assert vars(made) == {k: parsed[k] for k in vars(made)}
    assert set(vars(made)) == set(opts.option_names(declare)) | set(required)


def test_options_added_after_checkpoints_default_to_their_old_meaning():
    parsed = vars(opts.train_parser().parse_args(["-data", "d"]))
    assert opts.ADDED_MODEL_OPTIONS == {k: parsed[k] for k in opts.ADDED_MODEL_OPTIONS}
    saved = {k: v for k, v in parsed.items() if k not in opts.ADDED_MODEL_OPTIONS}
    assert opts.lacking_model_options(saved) == []
    del saved["rnn_size"]
    assert opts.lacking_model_options(saved) == ["rnn_size"]


def test_a_config_of_nested_aliases_is_refused_in_one_line(tmp_path, capsys):
    """480 bytes of nested YAML aliases once took 1.3 GB and 9 s, then printed a 254 MB line."""
    rows = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdef", "bcdefg"):
        rows.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(rows + ["dropout: *g"]) + "\n")
    with pytest.raises(SystemExit) as exc:
        opts.parse_with_given(opts.train_parser(), ["-data", "d", "-config", str(bomb)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "expand to more than 100000 items" in err and len(err) < 400


def test_a_config_key_typo_gets_the_command_lines_suggestions(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("word_vec_sze: 128\n")
    with pytest.raises(SystemExit):
        opts.parse_with_given(opts.train_parser(), ["-data", "d", "-config", str(cfg)])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown option -word_vec_sze (did you mean -word_vec_size" in err
    dashed = tmp_path / "d.yaml"
    dashed.write_text("-word_vec_size: 128\n--rnn_size: 64\n")   # keys written with dashes count as well
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", "-config", str(dashed)])
    assert opt.word_vec_size == 128 and opt.rnn_size == 64 and opts.given(opt, "word_vec_size")


def test_compile_without_a_compiler_is_refused_in_one_line(monkeypatch):
    import shutil
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/g++" if name == "g++" else None)
    assert _train_opt("-compile").compile is True   # a compiler: accepted
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(OptionError, match=re.escape("-compile: torch.compile needs a C++ compiler on the CPU")):
        _train_opt("-compile")
    assert _train_opt().compile is False   # off by default: nothing is checked


def test_translate_compile_without_a_compiler_is_refused_in_one_line(monkeypatch):
    import shutil
    monkeypatch.delenv("CXX", raising=False)
    parse = lambda *extra: opts.translate_parser().parse_args(["-model", "m", "-src", "s", *extra])  # noqa: E731
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/g++" if name == "g++" else None)
    opts.validate_translate_opts(parse("-compile"))   # a compiler: accepted
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(OptionError, match=re.escape("-compile: torch.compile needs a C++ compiler on the CPU")):
        opts.validate_translate_opts(parse("-compile"))
    opts.validate_translate_opts(parse())   # off by default: nothing is checked


def test_detokenize_replaces_unk_unless_keep_unk():
    """Readable output (-detokenize) writes the attended source word for <unk>, as -replace_unk does."""
    def updated(*args):
        opt = opts.parse_with_given(opts.translate_parser(), ["-model", "m", "-src", "s", *args])
        opts.update_translate_opts(opt)
        opts.validate_translate_opts(opt)
        return opt
    assert updated("-detokenize").replace_unk and not updated().replace_unk
    assert not updated("-detokenize", "-keep_unk").replace_unk
    with pytest.raises(OptionError, match="-keep_unk and -replace_unk"):
        updated("-detokenize", "-keep_unk", "-replace_unk")



@pytest.mark.parametrize("argv,line", [
    (["-beam_size", "5", "-output", "x", "-beam_size", "2"],
     "-beam_size given 2 times (5, then 2): the last, 2, is used"),
    (["-output", "a.txt", "--output=b.txt"], "-output given 2 times (a.txt, then b.txt): the last, b.txt, is used"),
    (["-gpu", "-1", "-gpu", "0", "-gpu", "0"], "-gpu given 3 times (-1, then 0, then 0): the last, 0, is used"),
])
def test_an_option_given_twice_with_two_values_is_named(argv, line):
    """Issue 53: argparse silently took the last value; now the log names it (`repeated_options`)."""
    opt = opts.parse_with_given(opts.translate_parser(), ["-model", "m", "-src", "s", *argv])
    assert opts.repeated_options(opt) == f"options given more than once: {line}"


def test_an_option_given_twice_alike_or_gathering_its_values_is_not_named():
    opt = opts.parse_with_given(opts.translate_parser(), ["-model", "m", "-src", "s", "-verbose", "-verbose",
                                                          "-beam_size", "3", "--beam_size", "3"])
    assert opt.beam_size == 3 and opt.verbose and opts.repeated_options(opt) == ""
    opt = opts.parse_with_given(opts.evaluate_parser(), ["-pred", "p", "-ref", "a", "-ref", "b"])
    assert opt.ref == ["a", "b"] and opts.repeated_options(opt) == ""


def test_the_log_names_an_option_given_twice(tmp_path, capsys):
    """Through an entry point: onmt_evaluate says it on standard error (no log), the last value used."""
    from onmt.bin import evaluate
    (tmp_path / "p.txt").write_text("a b\n")
    evaluate.main(["-pred", str(tmp_path / "p.txt"), "-ref", str(tmp_path / "p.txt"), "-seed", "1", "-seed", "2"])
    assert "onmt_evaluate: options given more than once: -seed given 2 times (1, then 2)" in capsys.readouterr().err

