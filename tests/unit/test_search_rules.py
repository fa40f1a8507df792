"""onmt/opts/search_rules.py: what sampling implies, and the one-line checks of sampling, -n_best and -alpha."""
import pytest

from onmt import opts
from onmt.errors import OptionError
from onmt.opts.search_rules import samples


def parsed(*argv):
    opt = opts.parse_with_given(opts.translate_parser(), ["-model", "m.pt", "-src", "s.txt", *argv])
    opts.update_translate_opts(opt)
    opts.validate_translate_opts(opt)
    return opt


def test_no_sampling_by_default_and_top_k_1_is_the_argmax():
    opt = parsed()
    assert (opt.random_sampling_topk, opt.beam_size, samples(opt)) == (1, 5, False)
    assert not samples(parsed("-random_sampling_topk", "1", "-random_sampling_temp", "0.5"))


@pytest.mark.parametrize("argv,topk", [(["-random_sampling_topk", "10"], 10), (["-random_sampling_topp", "0.9"], 0),
                                       (["-random_sampling_temp", "0.7"], 0), (["-random_sampling_topk", "-1"], -1)])
def test_sampling_implies_beam_1_and_upstream_s_top_k_default(argv, topk):
    opt = parsed(*argv, "-n_best", "3")
    assert (opt.random_sampling_topk, opt.beam_size, opt.n_best, samples(opt)) == (topk, 1, 3, True)


@pytest.mark.parametrize("argv,match", [
    (["-random_sampling_topk", "5", "-beam_size", "4"], "give -beam_size 1"),
    (["-random_sampling_topk", "-2"], "-random_sampling_topk must be >= -1"),
    (["-random_sampling_topp", "1.5"], r"-random_sampling_topp must be in \[0, 1\]"),
    (["-random_sampling_temp", "-1"], "-random_sampling_temp must be >= 0"),
    (["-n_best", "6"], "-n_best must be between 1 and -beam_size"),
    (["-alpha", "0.9"], "give -length_penalty wu or power"),
    (["-length_penalty", "avg", "-alpha", "0.9"], "give -length_penalty wu or power")])
def test_impossible_settings_are_one_line(argv, match):
    with pytest.raises(OptionError, match=match):
        parsed(*argv)


def test_the_power_penalty_takes_alpha():
    assert parsed("-length_penalty", "power", "-alpha", "0.5").alpha == 0.5
