"""Helpers for the model tests: tiny options, vocabularies and Batch objects built directly."""
import configargparse
import torch

from onmt.constants import BOS, EOS, PAD, SPECIALS, UNK
from onmt.inputters.batch import Batch
from onmt.inputters.vocab import Vocab, Vocabs
from onmt.opts import model_opts, update_model_opts, update_train_opts, validate_model_opts


def train_opt(*argv):
    """train.py's options for `-data d` and `argv`: the train and model groups updated and validated as a
    run's (what train.py checks before it resolves the run)."""
    from onmt import opts
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", *argv])
    opts.update_train_opts(opt)
    opts.validate_train_opts(opt)
    update_model_opts(opt)
    validate_model_opts(opt)
    return opt


def make_opt(**overrides):
    """Model options (tiny sizes, then `overrides`), updated and validated as train.py does, with
    train.py's other options at their defaults (the losses read some)."""
    parser = configargparse.ArgumentParser()
    model_opts(parser)
    opt = parser.parse_args([])
    defaults = dict(rnn_size=8, word_vec_size=6, layers=-1, enc_layers=1, dec_layers=1, dropout=0.0)
    values = {**defaults, **overrides}
    if values.get("reinforced"):
        values.setdefault("scheduled_sampling", 0.0)   # not the paper's 0.25 unless asked for
    for k, v in values.items():
        setattr(opt, k, v)
    opt._given = frozenset(values)   # as given on a command line: the update step keeps them
    update_model_opts(opt)
    update_train_opts(opt)
    validate_model_opts(opt)
    return opt


def make_vocabs(src_vocab_size=20, tgt_vocab_size=12, shared=True):
    words = SPECIALS + [f"w{i}" for i in range(src_vocab_size - len(SPECIALS))]
    src = Vocab(words)
    tgt = (src.prefix(tgt_vocab_size) if shared
           else Vocab(SPECIALS + [f"t{i}" for i in range(tgt_vocab_size - len(SPECIALS))]))
    return Vocabs(src, tgt, shared)


def make_batch(vocabs, B=3, S=7, T=6, seed=0, src=None, lengths=None, copy_source=False):
    """A Batch with random source ids (PAD-padded, lengths >= 2, one full-length example), extended
    ids for source words outside the target vocabulary, and a target copying parts of the source
    (with copy_source: the target body is exactly the source, T = S + 2, lengths all S)."""
    g = torch.Generator().manual_seed(seed)
    V_src, V_tgt = len(vocabs.src), len(vocabs.tgt)
    if lengths is None:
        lengths = torch.randint(2, S + 1, (B,), generator=g)
        lengths[0] = S
    if src is None:
        src = torch.randint(len(SPECIALS), V_src, (B, S), generator=g)
    src = src.clone()
    S = src.size(1)
    src[torch.arange(S).unsqueeze(0) >= lengths.unsqueeze(1)] = PAD
    src_ex = src.clone()
    oovs = []
    for b in range(B):
        words = []
        for i in range(int(lengths[b])):
            w = int(src[b, i])
            if w >= V_tgt:  # not in the target vocabulary: an extended id
                if w not in words:
                    words.append(w)
                src_ex[b, i] = V_tgt + words.index(w)
        oovs.append(words)
    n_oov = max(len(o) for o in oovs)
    if copy_source:
        tgt_body = src_ex
    else:
        tgt_body = torch.where(torch.rand(B, T - 2, generator=g) < 0.5,
                               src_ex[:, torch.randint(0, 2, (T - 2,), generator=g)],
                               torch.randint(len(SPECIALS), V_tgt, (B, T - 2), generator=g))
    tgt_ex = torch.cat([torch.full((B, 1), BOS), tgt_body, torch.full((B, 1), EOS)], dim=1)
    tgt_len = torch.randint(1, tgt_body.size(1) + 1, (B,), generator=g)
    tgt_len[0] = tgt_body.size(1)
    for b in range(0 if copy_source else B):  # shorten some targets: EOS then padding
        tgt_ex[b, 1 + int(tgt_len[b])] = EOS
        tgt_ex[b, 2 + int(tgt_len[b]):] = PAD
    tgt = tgt_ex.masked_fill(tgt_ex >= V_tgt, UNK)
    return Batch(src=src, src_lengths=lengths, src_ex=src_ex, oovs=[[f"w{w}" for w in o] for o in oovs],
                 n_oov=n_oov, indices=torch.arange(B), tgt=tgt, tgt_ex=tgt_ex)


def build(opt, vocabs, seed=0):
    from onmt.model_builder import build_model
    torch.manual_seed(seed)
    model = build_model(opt, vocabs)
    model.eval()
    return model
