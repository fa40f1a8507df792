"""A small reinforced model and batches for its tests: random sources with words outside the target
vocabulary, and copy-only batches whose targets only the pointer can produce; the per-step-generator
reference the tests compare against is bench/lib/per_step.py's `per_step_forward` (the benchmark's
baseline)."""
import configargparse
import torch

from onmt import opts
from onmt.constants import BOS, EOS, PAD, SPECIALS, UNK
from onmt.execution import Execution
from onmt.inputters.batch import Batch
from onmt.inputters.vocab import Vocab, Vocabs
from onmt.model_builder import MODEL_REGISTRY, init_parameters

V_SRC, V_TGT = 40, 24


def _vocabs():
    words = SPECIALS + [f"w{i}" for i in range(V_SRC - len(SPECIALS))]
    return Vocabs(Vocab(words), Vocab(words[:V_TGT]), shared=True)


def _opt(*more_args):
    parser = configargparse.ArgumentParser()
    opts.model_opts(parser)
    opt = opts.parse_with_given(parser, ["-reinforced", "-brnn", "-rnn_size", "12", "-word_vec_size", "6",
                                         "-layers", "1", "-dropout", "0", "-scheduled_sampling", "0",
                                         *more_args])
    opts.update_model_opts(opt)
    opts.validate_model_opts(opt)
    return opt


def _model(*more_args, seed=0, execution=Execution()):
    """The reinforced model of these options: the registry's class for `execution` (default: fused,
    FusedReinforcedModel), built by its from_opt."""
    torch.manual_seed(seed)
    opt = _opt(*more_args)
    model = MODEL_REGISTRY["reinforced"].model_class(execution).from_opt(opt, _vocabs(), execution=execution)
    init_parameters(model, opt.param_init)  # as onmt.model_builder.build_model does
    return model


def _batch(seed=0, B=3, S=7, T=6):
    """Random sources with words outside the target vocabulary; targets copy some of them."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, S + 1, (B,), generator=g)
    lengths[0] = S
    src = torch.full((B, S), PAD)
    src_ex, tgt, tgt_ex = src.clone(), torch.full((B, T), PAD), torch.full((B, T), PAD)
    oovs = []
    for b in range(B):
        words = torch.randint(4, V_SRC, (int(lengths[b]),), generator=g)
        words[1] = words[0]  # a duplicate
        src[b, : len(words)] = words
        oov = []
        for j, w in enumerate(words.tolist()):
            if w >= V_TGT and w not in oov:
                oov.append(w)
            src_ex[b, j] = w if w < V_TGT else V_TGT + oov.index(w)
        oovs.append([f"w{w - 4}" for w in oov])
        n = int(torch.randint(1, T - 1, (1,), generator=g))
        body = torch.where(torch.rand(n, generator=g) < 0.5, words[:n].repeat(2)[:n],
                           torch.randint(4, V_TGT, (n,), generator=g))
        body_ex = torch.tensor([w if w < V_TGT else V_TGT + oov.index(w) for w in body.tolist()])
        tgt[b, : n + 2] = torch.cat([torch.tensor([BOS]), body.masked_fill(body >= V_TGT, UNK), torch.tensor([EOS])])
        tgt_ex[b, : n + 2] = torch.cat([torch.tensor([BOS]), body_ex, torch.tensor([EOS])])
    return Batch(src=src, src_lengths=lengths, src_ex=src_ex, oovs=oovs, n_oov=max(len(o) for o in oovs),
                 indices=torch.arange(B), tgt=tgt, tgt_ex=tgt_ex)


def _copy_batch(seed, B=16, S=4):
    """Sources of OOV words only; the target repeats them, so only the pointer can produce them."""
    g = torch.Generator().manual_seed(seed)
    src = torch.stack([torch.randperm(V_SRC - V_TGT, generator=g)[:S] + V_TGT for _ in range(B)])  # (B, S)
    src_ex = V_TGT + torch.arange(S).expand(B, S)
    tgt = torch.cat([torch.full((B, 1), BOS), torch.full((B, S), UNK), torch.full((B, 1), EOS)], 1)
    tgt_ex = torch.cat([torch.full((B, 1), BOS), src_ex, torch.full((B, 1), EOS)], 1)
    return Batch(src=src, src_lengths=torch.full((B,), S), src_ex=src_ex, oovs=[["x"] * S] * B, n_oov=S,
                 indices=torch.arange(B), tgt=tgt, tgt_ex=tgt_ex)
