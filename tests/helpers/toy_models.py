"""Tiny deterministic models of the model interface, and a minimal text -> Batch builder, for the
translator tests. Nothing here is used outside tests."""
from dataclasses import dataclass

import torch
from torch import nn

from onmt.constants import BOS, EOS, PAD, SPECIALS, UNK
from onmt.inputters.batch import Batch
from onmt.inputters.vocab import Vocab, Vocabs
from onmt.interface import DecoderStateBase, EncoderOutput
from onmt.models.generic import ModelDefaults, gold_from_forward


def toy_vocabs(n_src_words=12, n_tgt_words=6):
    """Shared vocabulary: words w0..w{n_src-1}; the target vocabulary is its first entries."""
    src = Vocab(SPECIALS + [f"w{i}" for i in range(n_src_words)])
    return Vocabs(src, src.prefix(len(SPECIALS) + n_tgt_words), shared=True)


def toy_batches(src_lines, tgt_lines, vocabs, batch_size):
    """Batches in input order; lines are whitespace-tokenized; OOVs relative to the target vocabulary."""
    V = len(vocabs.tgt)
    for start in range(0, len(src_lines), batch_size):
        chunk = range(start, min(start + batch_size, len(src_lines)))
        srcs, src_exs, oovs, tgts, tgt_exs = [], [], [], [], []
        for i in chunk:
            words = src_lines[i].split()
            oov = []
            for w in words:
                if w not in vocabs.tgt.stoi and w not in oov:
                    oov.append(w)
            srcs.append([vocabs.src.lookup(w) for w in words])
            src_exs.append([vocabs.tgt.stoi.get(w, V + oov.index(w) if w in oov else UNK) for w in words])
            oovs.append(oov)
            if tgt_lines is not None:
                t = tgt_lines[i].split()
                tgts.append([BOS] + [vocabs.tgt.lookup(w) for w in t] + [EOS])
                tgt_exs.append([BOS] + [vocabs.tgt.stoi.get(w, V + oov.index(w) if w in oov else UNK)
                                        for w in t] + [EOS])
        yield Batch(src=_pad(srcs), src_lengths=torch.tensor([len(s) for s in srcs]), src_ex=_pad(src_exs),
                    oovs=oovs, n_oov=max(len(o) for o in oovs), indices=torch.tensor(list(chunk)),
                    tgt=_pad(tgts) if tgts else None, tgt_ex=_pad(tgt_exs) if tgt_exs else None)


def _pad(seqs):
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD, dtype=torch.long)  # (B, L)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return out


@dataclass
class ToyState(DecoderStateBase):
    memory: torch.Tensor    # (B, S, E)
    mask: torch.Tensor      # (B, S)
    src_ex: torch.Tensor    # (B, S)
    hidden: torch.Tensor    # (B, E)
    history: torch.Tensor   # (B, t) inputs fed so far (checks that reorder keeps histories whole)
    n_oov: int


class ToyModel(ModelDefaults, nn.Module):
    """Embedding + tanh recurrent cell + dot attention (+ copy scatter over src_ex with `copy`).

    The next-token distribution depends on the whole history, through the hidden state and through
    an explicit history of the inputs (each token already fed lowers its logit), and on the source,
    so a wrong beam reorder changes scores: tests re-score hypotheses by teacher forcing.
    `sharp` scales the logits (larger: more peaked distributions).
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, dim=8, copy=False, seed=0, sharp=2.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.tgt_vocab_size, self.copy, self.sharp = tgt_vocab_size, copy, sharp
        self.src_emb = nn.Parameter(torch.randn(src_vocab_size, dim, generator=g))
        self.tgt_emb = nn.Parameter(torch.randn(tgt_vocab_size, dim, generator=g))
        self.w_in = nn.Parameter(torch.randn(dim, dim, generator=g) / dim ** 0.5)
        self.w_rec = nn.Parameter(torch.randn(dim, dim, generator=g) / dim ** 0.5)
        self.w_out = nn.Parameter(torch.randn(dim, tgt_vocab_size, generator=g) / dim ** 0.5)
        self.w_gen = nn.Parameter(torch.randn(dim, generator=g) / dim ** 0.5)
        self.bias = nn.Parameter(torch.zeros(tgt_vocab_size))                # (V,) e.g. favour <unk>

    def encode(self, batch):
        mask = batch.src != PAD                                              # (B, S)
        memory = torch.tanh(self.src_emb[batch.src]) * mask.unsqueeze(-1)    # (B, S, E)
        final = memory.sum(1) / mask.sum(1, keepdim=True)                    # (B, E)
        return EncoderOutput(memory=memory, final=final, mask=mask)

    def init_state(self, batch, enc):
        B = batch.batch_size
        return ToyState(enc.memory, enc.mask, batch.src_ex, enc.final,
                        torch.zeros(B, 0, dtype=torch.long, device=batch.src.device), batch.n_oov)

    def decode_step(self, inputs, state):
        x = inputs.masked_fill(inputs >= self.tgt_vocab_size, UNK)           # (B,)
        h = torch.tanh(self.tgt_emb[x] @ self.w_in + state.hidden @ self.w_rec)  # (B, E)
        att = (state.memory @ h.unsqueeze(-1)).squeeze(-1)                   # (B, S)
        att = att.masked_fill(~state.mask, float("-inf")).softmax(-1)        # (B, S)
        ctx = (att.unsqueeze(1) @ state.memory).squeeze(1)                   # (B, E)
        logits = self.sharp * ((h + ctx) @ self.w_out) + self.bias          # (B, V)
        seen = state.history.clamp(max=self.tgt_vocab_size - 1)              # (B, t) explicit history use
        logits = logits - 0.5 * torch.zeros_like(logits).scatter_add(1, seen, torch.ones_like(seen, dtype=logits.dtype))
        if self.copy:
            p_gen = torch.sigmoid((h + ctx) @ self.w_gen).unsqueeze(1)       # (B, 1)
            probs = torch.cat([p_gen * logits.softmax(-1),
                               logits.new_zeros(x.size(0), state.n_oov)], 1)  # (B, X)
            probs = probs.scatter_add(1, state.src_ex, (1 - p_gen) * att)
            logp = probs.log()
        else:
            logp = logits.log_softmax(-1)                                    # (B, V)
        history = torch.cat([state.history, inputs.unsqueeze(1)], 1)         # (B, t+1)
        new = ToyState(state.memory, state.mask, state.src_ex, h, history, state.n_oov)
        return logp, new, {"std": att}

    def forward(self, batch, enc=None):
        enc = self.encode(batch) if enc is None else enc
        state = self.init_state(batch, enc)
        logps, atts = [], []
        for t in range(batch.tgt.size(1) - 1):
            logp, state, attns = self.decode_step(batch.tgt_ex[:, t], state)
            logps.append(logp)
            atts.append(attns["std"])
        return torch.stack(logps, 1), {"std": torch.stack(atts, 1)}          # (B, T-1, X), (B, T-1, S)

    def gold_log_likelihood(self, batch, enc=None):
        return gold_from_forward(self, batch, enc)
