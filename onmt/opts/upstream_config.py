"""OpenNMT-py 3.x configs: a `data:` mapping of corpora instead of a preprocessed -data prefix.

    data:
        cnndm: {path_src: cnndm/train.src, path_tgt: cnndm/train.tgt,
                transforms: [filtertoolong], weight: 1}
        valid: {path_src: cnndm/valid.src, path_tgt: cnndm/valid.tgt}
    save_data: cnndm/run/example
    src_vocab: cnndm/run/example.vocab.src
    share_vocab: true
    src_seq_length: 10000
    ... model and training keys, as here

`translate(obj)` turns such a YAML mapping into this toolkit's options: the corpora and the
vocabulary keys become one JSON option, -data_config, and -data a placeholder; train.py then builds
(or finds) the preprocessed dataset for them (onmt/inputters/upstream_data.py), cached by the
content of the corpora and these settings. Keys of upstream's data pipeline that have no counterpart
here (transforms, weight, subword models, n_sample, overwrite) are read and dropped; so are
`model_type: text` and `decoder_type: rnn`, the only ones there are here.
"""
import json

from onmt.opts.families import FAMILIES, family_name

# upstream key -> the spec's key (preprocessing settings of the dataset built for the config)
DATA_KEYS = {"save_data": "save_data", "src_vocab": "src_vocab", "tgt_vocab": "tgt_vocab",
             "share_vocab": "share_vocab",
             "src_vocab_size": "src_vocab_size", "tgt_vocab_size": "tgt_vocab_size",
             "src_seq_length": "src_seq_length", "tgt_seq_length": "tgt_seq_length",
             "src_words_min_frequency": "src_words_min_frequency",
             "tgt_words_min_frequency": "tgt_words_min_frequency", "lower": "lower",
             "src_seq_length_trunc": "src_seq_length_trunc",
             "tgt_seq_length_trunc": "tgt_seq_length_trunc"}
# upstream's data-pipeline keys with no counterpart here -> why they can be dropped (one log line
# names them)
WHY_DROPPED = {
    "transforms": "no on-the-fly transforms here: the corpora are read as they are",
    "weight": "corpora are read whole, not sampled by weight",
    "overwrite": "the dataset is cached by its content and settings, never written over",
    "n_sample": "onmt_build_vocab's -n_sample",
    "src_subword_type": "no subword models here", "tgt_subword_type": "no subword models here",
    "src_subword_model": "no subword models here", "tgt_subword_model": "no subword models here",
    "src_onmttok_kwargs": "no subword models here", "tgt_onmttok_kwargs": "no subword models here",
    "skip_empty_level": "empty examples are dropped and counted",
}
DROPPED = tuple(WHY_DROPPED)
CORPUS_KEYS = ("path_src", "path_tgt")
ONLY_CHOICE = {"model_type": "text", "decoder_type": "rnn"}
PLACEHOLDER = "<the data: mapping of -config>"


class UpstreamConfigError(ValueError):
    pass


def is_upstream(obj):
    return isinstance(obj, dict) and isinstance(obj.get("data"), dict)


def ignored(obj):
    """The keys of a 3.x config mapping that are read and dropped, each once with why:
    ["transforms (no on-the-fly transforms here: ...)", ...], top-level keys and those of the
    corpora alike."""
    keys = [k for k in obj if k in WHY_DROPPED]
    for corpus in obj["data"].values():
        keys += [k for k in (corpus if isinstance(corpus, dict) else ()) if k not in CORPUS_KEYS]
    keys = list(dict.fromkeys(keys))
    return [f"{k} ({WHY_DROPPED.get(k, 'a corpus setting with no counterpart here')})"
            for k in keys]


def translate(obj):
    """The options of a 3.x config mapping (module docstring): -> a new mapping of this toolkit's
    keys."""
    out = {k: v for k, v in obj.items()
           if k != "data" and k not in DATA_KEYS and k not in DROPPED}
    for key, only in ONLY_CHOICE.items():
        if key in out:
            if out.pop(key) != only:
                raise UpstreamConfigError(f"{key}: {obj[key]} is not available here (only {only})")
    corpora, valid = [], None
    for name, corpus in obj["data"].items():
        if not isinstance(corpus, dict) or "path_src" not in corpus or "path_tgt" not in corpus:
            raise UpstreamConfigError(f"data: {name} needs path_src and path_tgt")
        pair = [str(corpus["path_src"]), str(corpus["path_tgt"])]
        if name == "valid":
            valid = pair
        else:
            corpora.append(pair)
    if not corpora:
        raise UpstreamConfigError("data: no training corpus (only valid)")
    # -copy_attn (upstream's), -reinforced, -model_family
    family = FAMILIES.get(family_name(obj))
    spec = {"train": corpora, "valid": valid,
            "dynamic_dict": bool(family and family.needs_dynamic_dict),
            **{DATA_KEYS[k]: obj[k] for k in DATA_KEYS if k in obj}}
    if "save_data" not in spec:
        raise UpstreamConfigError("save_data: the folder prefix for the built dataset is missing")
    out["data"] = PLACEHOLDER
    out["data_config"] = json.dumps(spec, sort_keys=True)
    return out
