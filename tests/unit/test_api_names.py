"""onmt/opts/api_names.py: the API's keywords derived from translate.py's declarations; Hugging Face's names
mapped onto translate.py's options, and the one-line refusals."""
from dataclasses import fields

import pytest

from onmt import opts
from onmt.bin import tune_decoding
from onmt.opts import translate as translate_opts
from onmt.opts.api_names import API_EXTRA, HF_UNSUPPORTED, api_options, from_hf
from onmt.translate.decoding import SearchSettings


def test_the_api_takes_every_search_option_of_translate_py():
    parser = opts.translate_parser()
    search = next(g for g in parser._action_groups if g.title == "Search")
    declared = {a.dest for a in search._group_actions} - {"dump_beam"}
    assert declared <= set(api_options())
    assert {"random_sampling_topk", "random_sampling_topp", "random_sampling_temp", "ban_unk_token", "seed",
            "batch_size", "src_seq_length_trunc"} <= set(api_options())
    assert all(f"-{name}" in parser._option_string_actions for name in api_options())


def test_the_search_options_are_listed_once_the_api_s_keywords_the_settings_and_the_tuner_s_fixed_set():
    """The declarations are the one list: the API's keywords are SearchSettings' fields, the search options
    that are not settings, then the input rules and the run (API_EXTRA); the tuner holds every search rule
    fixed but the length rule it tunes."""
    settings = tuple(f.name for f in fields(SearchSettings))
    declared = opts.option_names(translate_opts.translate_search_opts)
    assert set(declared) == set(settings) | set(translate_opts.NOT_SEARCH_SETTINGS), \
        "a search option is neither a SearchSettings field nor in NOT_SEARCH_SETTINGS"
    assert api_options() == declared + API_EXTRA
    tuned = {"length_penalty", "alpha", "min_length"}
    not_fixed = {"n_best", "ban_unk_token", "random_sampling_topk", "random_sampling_topp", "random_sampling_temp"}
    assert set(tune_decoding.FIXED) == set(declared) - tuned - not_fixed | {"src_seq_length_trunc",
                                                                           "tgt_seq_length_trunc"}


def test_a_new_search_rule_declared_once_reaches_the_api_and_the_tuner(monkeypatch):
    search_opts = translate_opts.search_opts

    def with_new_rule(g):
        search_opts(g)
        g.add("-new_rule", "--new_rule", type=int, default=0, help="a rule added later")

    monkeypatch.setattr(translate_opts, "search_opts", with_new_rule)
    opts.option_names.cache_clear()
    try:
        assert "new_rule" in api_options()
        assert "new_rule" in tune_decoding.fixed_options()
        assert "new_rule" in opts.option_names(translate_opts.translate_search_opts)  # SearchSettings' test fails
    finally:
        monkeypatch.undo()
        opts.option_names.cache_clear()


@pytest.mark.parametrize("hf,here", [
    ({"num_beams": 3}, {"beam_size": 3}), ({"num_return_sequences": 2}, {"n_best": 2}),
    ({"max_new_tokens": 7}, {"max_length": 7}), ({"min_new_tokens": 2}, {"min_length": 2}),
    ({"no_repeat_ngram_size": 3}, {"block_ngram_repeat": 3}),
    ({"do_sample": True}, {"random_sampling_topk": 50}),
    ({"do_sample": True, "top_k": 0, "top_p": 0.9, "temperature": 0.7},
     {"random_sampling_topk": 0, "random_sampling_topp": 0.9, "random_sampling_temp": 0.7}),
    ({"do_sample": True, "top_p": 1.0}, {"random_sampling_topk": 50, "random_sampling_topp": 0.0}),
    ({"do_sample": False}, {}),
    ({"length_penalty": 1.0}, {"length_penalty": "power", "alpha": 1.0}),
    ({"length_penalty": 0}, {"length_penalty": "power", "alpha": 0.0}),
    ({"length_penalty": "wu", "alpha": 0.5}, {"length_penalty": "wu", "alpha": 0.5}),
    ({"beam_size": 2, "num_beams": None}, {"beam_size": 2}),
])
def test_hugging_face_names_map_onto_translate_py_s_options(hf, here):
    assert from_hf(hf) == here


@pytest.mark.parametrize("kwargs,error,match", [
    ({"num_beams": 3, "beam_size": 3}, TypeError, "num_beams .* and beam_size are one option: give one"),
    ({"do_sample": True, "top_k": 5, "random_sampling_topk": 5}, TypeError, "top_k .* and random_sampling_topk"),
    ({"do_sample": True, "random_sampling_topk": 5}, TypeError, "give top_k or random_sampling_topk"),
    ({"length_penalty": 0.8, "alpha": 0.8}, TypeError, "are one setting"),
    ({"repetition_penalty": 1.2}, TypeError, r"repetition_penalty \(Hugging Face's\) has no counterpart here"),
    ({"top_k": 5}, ValueError, "top_k=5 is a sampling setting: give do_sample=True"),
    ({"do_sample": True, "num_beams": 4}, ValueError, "beam-search sampling"),
    ({"do_sample": "yes"}, TypeError, "do_sample must be a bool"),
    ({"length_penalty": -0.5}, ValueError, "negative exponent"),
])
def test_names_without_counterpart_or_given_twice_are_one_line(kwargs, error, match):
    with pytest.raises(error, match=match) as e:
        from_hf(kwargs)
    assert "\n" not in str(e.value)


def test_every_unsupported_name_says_why():
    assert all(why and "\n" not in why for why in HF_UNSUPPORTED.values())
    assert not set(HF_UNSUPPORTED) & set(api_options())
