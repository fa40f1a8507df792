"""The Python API's keyword arguments (onmt/api.py Summarizer.summarize): translate.py's search
options by their own names (`api_options`, derived from their declarations, so the two cannot drift
apart), and Hugging Face generate()'s names mapped onto them (`from_hf`).

    num_beams             -> beam_size
    num_return_sequences  -> n_best (with do_sample: the number of samples)
    max_new_tokens        -> max_length (tokens produced, </s> aside)
    min_new_tokens        -> min_length
    no_repeat_ngram_size  -> block_ngram_repeat
    do_sample=True        -> sampling: random_sampling_topk = top_k (Hugging Face's default 50)
    top_k, top_p, temperature -> random_sampling_topk, _topp (1.0: off), _temp; with do_sample=True
    length_penalty=a (a number) -> length_penalty "power", alpha a: score / length^a (1.0 is avg)

A name and its counterpart given together, a Hugging Face name with no counterpart here
(HF_UNSUPPORTED), or a sampling setting without do_sample=True, is one TypeError or ValueError.
A name left out keeps this toolkit's default: no length penalty (Hugging Face's default 1.0 is
length_penalty=1.0 here), greedy or beam search unless do_sample=True.
"""
from onmt.opts.translate import translate_search_opts
from onmt.opts.update import option_names

# the options of the API beyond the search (how much is read at once, the input's cut, the seed)
API_EXTRA = ("batch_size", "src_seq_length_trunc", "seed")

# Hugging Face's name -> translate.py's option, same values
HF_NAMES = {"num_beams": "beam_size", "num_return_sequences": "n_best",
            "max_new_tokens": "max_length", "min_new_tokens": "min_length",
            "no_repeat_ngram_size": "block_ngram_repeat"}
# the sampling names: only with do_sample=True, as generate() reads them
HF_SAMPLING = {"top_k": "random_sampling_topk", "top_p": "random_sampling_topp",
               "temperature": "random_sampling_temp"}
HF_TOP_K = 50   # generate()'s default top_k

_NO_DIVERSE = "no diverse (group) beam search here"
_SPECIAL = "the special tokens are the vocabulary's own <s>, </s>, <blank>"
HF_UNSUPPORTED = {
    "repetition_penalty": "no repetition penalty here; no_repeat_ngram_size blocks n-grams",
    "encoder_repetition_penalty": "no repetition penalty here",
    "encoder_no_repeat_ngram_size": "n-gram blocking looks at the summary only",
    "num_beam_groups": _NO_DIVERSE, "diversity_penalty": _NO_DIVERSE,
    "early_stopping": "the beam search stops as soon as no live hypothesis can beat the n best",
    "max_time": "no time limit on a search",
    "typical_p": "no typical sampling; top_k, top_p and temperature with do_sample=True",
    "min_p": "no min-p sampling; top_k, top_p and temperature with do_sample=True",
    "epsilon_cutoff": "no truncation sampling; top_k and top_p with do_sample=True",
    "eta_cutoff": "no truncation sampling; top_k and top_p with do_sample=True",
    "penalty_alpha": "no contrastive search",
    "bad_words_ids": "ban_unk_token=True bans <unk>; no other word list",
    "suppress_tokens": "ban_unk_token=True bans <unk>; no other word list",
    "force_words_ids": "no constrained beam search", "constraints": "no constrained beam search",
    "exponential_decay_length_penalty": "the length penalties are length_penalty's",
    "bos_token_id": _SPECIAL, "eos_token_id": _SPECIAL, "pad_token_id": _SPECIAL,
    "decoder_start_token_id": _SPECIAL, "forced_bos_token_id": _SPECIAL,
    "forced_eos_token_id": _SPECIAL,
    "output_scores": "return_details=True gives each summary's score",
    "return_dict_in_generate": "return_details=True gives a dict per text",
    "output_attentions": "return_details=True gives the attention",
    "use_cache": "decoding always keeps its state",
    "generation_config": "give the settings as keyword arguments",
    "logits_processor": "no custom processors", "stopping_criteria": "no custom criteria",
    "prefix_allowed_tokens_fn": "no constrained decoding", "streamer": "no streaming of tokens",
    "assistant_model": "no assisted decoding", "guidance_scale": "no classifier-free guidance",
}


def api_options():
    """The API's keyword arguments by this toolkit's names: translate.py's search options
    (onmt/opts/translate.py translate_search_opts) then API_EXTRA."""
    return option_names(translate_search_opts) + API_EXTRA


def from_hf(kwargs):
    """{option: value} for keyword arguments that may use Hugging Face's names (module docstring);
    the other keywords as they are. TypeError for a name with no counterpart here or given with
    its counterpart, ValueError for a value or combination that has none."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    unsupported = sorted(set(kwargs) & set(HF_UNSUPPORTED))
    if unsupported:
        name = unsupported[0]
        raise TypeError(f"{name} (Hugging Face's) has no counterpart here: "
                        f"{HF_UNSUPPORTED[name]}")
    out = {k: v for k, v in kwargs.items()
           if k not in HF_NAMES and k not in HF_SAMPLING and k != "do_sample"}
    for hf, here in {**HF_NAMES, **HF_SAMPLING}.items():
        if hf in kwargs and here in kwargs:
            raise TypeError(f"{hf} (Hugging Face's name) and {here} are one option: give one")
    out.update({HF_NAMES[k]: v for k, v in kwargs.items() if k in HF_NAMES})
    out.update(_sampling(kwargs))
    if "length_penalty" in kwargs:
        out.update(_length_penalty(kwargs))
    return out


def _sampling(kwargs):
    """The random_sampling_* options of do_sample, top_k, top_p and temperature."""
    do_sample = kwargs.get("do_sample", False)
    if not isinstance(do_sample, bool):
        raise TypeError(f"do_sample must be a bool, got {type(do_sample).__name__} {do_sample!r}")
    given = [k for k in HF_SAMPLING if k in kwargs]
    if not do_sample:
        if given:
            raise ValueError(f"{given[0]}={kwargs[given[0]]!r} is a sampling setting: give "
                             "do_sample=True too (generate() would ignore it)")
        return {}
    if "random_sampling_topk" in kwargs and "top_k" not in kwargs:
        raise TypeError("do_sample=True (Hugging Face's top_k 50) and random_sampling_topk are "
                        "one option: give top_k or random_sampling_topk")
    beams = kwargs.get("num_beams", kwargs.get("beam_size"))
    if beams is not None and beams != 1:
        raise ValueError(f"do_sample=True with {beams} beams (beam-search sampling) has no "
                         "counterpart here: sampling draws num_return_sequences samples, "
                         "num_beams=1")
    out = {"random_sampling_topk": kwargs.get("top_k", kwargs.get("random_sampling_topk",
                                                                   HF_TOP_K))}
    if "top_p" in kwargs:
        top_p = kwargs["top_p"]
        # generate()'s 1.0 keeps every token
        out["random_sampling_topp"] = 0.0 if isinstance(top_p, (int, float)) and top_p >= 1 \
            else top_p
    if "temperature" in kwargs:
        out["random_sampling_temp"] = kwargs["temperature"]
    return out


def _length_penalty(kwargs):
    """Hugging Face's number (score / length^a) as length_penalty "power" with alpha a; a str is
    this toolkit's own (none, avg, wu, power)."""
    value = kwargs["length_penalty"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return {"length_penalty": value}
    if "alpha" in kwargs:
        raise TypeError(f"length_penalty={value!r} (Hugging Face's exponent) and alpha are one "
                        "setting: give length_penalty=\"power\" with alpha, or the number alone")
    if value < 0:
        raise ValueError(f"length_penalty={value!r}: a negative exponent (favouring short "
                         "summaries) has no counterpart here (0: no penalty, 1.0: avg)")
    return {"length_penalty": "power", "alpha": float(value)}
