"""Options: every parser takes its options from a YAML -config too; validation in one place."""
import pytest

from onmt import opts
from onmt.opts import OptionError


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
    opts.validate_model_opts(opt)
    assert opt.copy_attn and opt.share_embeddings  # implied by -reinforced


@pytest.mark.parametrize("name", ["cnndm_reinforced", "gigaword_reinforced", "demo_train"])
def test_shipped_train_configs_parse(name):
    opt = opts.train_parser().parse_args(["-config", f"config/{name}.yaml", "-data", "d"])
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
    opts.validate_translate_opts(opt)
    assert opt.block_ngram_repeat == 3
    opt = opts.train_parser().parse_args(["-data", "d", "-scheduled_sampling", "1.5"])
    with pytest.raises(OptionError, match="-scheduled_sampling"):
        opts.validate_model_opts(opt)
