"""Tiny untrained checkpoints of each model family, saved as train.py saves them (model, opt, vocab,
preprocessing record), for the translate / inspection / API tests."""
import torch

from helpers.models import make_opt
from helpers.toy_models import toy_vocabs

VOCABS = toy_vocabs(n_src_words=14, n_tgt_words=6)   # w6..w13 are outside the target vocabulary

FAMILIES = {
    "reinforced": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6, param_init=0.5),
    "reinforced_no_intra": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6, param_init=0.5,
                                no_intra_decoder_attn=True),
    "copy": dict(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp", param_init=0.5),
    "rnn": dict(brnn=True, global_attention="general", param_init=0.5),
}


def build_tiny(family, seed=0, execution=None):
    """(model in eval mode, its options) of a FAMILIES entry, built with `execution` (onmt/execution.py)."""
    from onmt.model_builder import build_model
    opt = make_opt(**FAMILIES[family])
    torch.manual_seed(seed)
    model = build_model(opt, VOCABS, execution=execution)
    model.eval()
    return model, opt


def save_tiny_checkpoint(path, family, preprocess=None, seed=0):
    """A checkpoint file of a FAMILIES entry; returns its path as a string."""
    from onmt.opts import saved_options
    model, opt = build_tiny(family, seed)
    ckpt = {"model": model.state_dict(), "opt": saved_options(opt), "vocab": VOCABS.to_dict(), "step": 0}
    if preprocess is not None:
        ckpt["preprocess"] = preprocess
    torch.save(ckpt, str(path))
    return str(path)
