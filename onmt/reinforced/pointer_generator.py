"""Token generation / pointer mixture over the extended vocabulary (Paulus et al. 2017, 2.3 and 3.2).

p(u=1) = sigmoid(W_u o + b_u); p(y | u=0) = softmax(W_out o + b_out) over V_tgt;
p(y = x_i | u=1) = alpha^e_i summed over the source positions holding the same word;
p(y) = p(u=1) p(y | u=1) + p(u=0) p(y | u=0), over X = V_tgt + n_oov ids.

With `tied`, W_out = tanh(E_tgt W_proj) is evaluated from the current parameters (`out_weight()`);
callers that project many chunks of rows in one forward pass compute it once and pass it in.
Everything is in log space; no log(0) and no NaN even when a row's copy mass is zero.

Precision: everything here is float32 under autocast (-amp) too, W_out and the o W_out^T product
included: each method is a float32 island (onmt/modules/precision.py) that widens o (which the LSTM and
attention products give in bfloat16 / float16) and the attention on entry. Its outputs (log p, the
logits, W_out) are float32; gradients reach o in o's own dtype.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.modules.copy_mixture import (  # noqa: F401
    IMPOSSIBLE,
    copy_at_sources,
    first_occurrence,
    gold_mixture,
    mixture_argmax,
    scatter_mixture,
)
from onmt.modules.gold_softmax import logit_stats
from onmt.modules.packed_linear import PackedLinear
from onmt.modules.precision import float32_region, widen
from onmt.modules.sampling import sample_rows


class PointerGenerator(nn.Module):
    """Maps o_t (N, D) and the encoder attention (N, S) to log p over the extended vocabulary."""

    def __init__(self, in_dim, vocab_size, embedding=None, tied=True):
        super().__init__()
        self.vocab_size = vocab_size
        self.tied = tied
        self.switch = nn.Linear(in_dim, 1)  # W_u, b_u
        if tied:
            if embedding is None:
                raise ValueError("a tied output projection needs the (partial) target embedding")
            self.embedding = embedding  # PartialEmbedding; shared, registered again but one parameter
            self.proj = nn.Parameter(torch.empty(embedding.embedding_dim, in_dim))  # (E, D) W_proj
            self.bias = nn.Parameter(torch.zeros(vocab_size))  # (V,) b_out
            nn.init.xavier_uniform_(self.proj)
        else:
            self.out = nn.Linear(in_dim, vocab_size)  # free W_out (V, D), b_out

    def out_weight(self, n_oov=0):
        """W_out and b_out from the current parameters, padded to the extended vocabulary:
        (X, D) and (X,), the OOV slots with zero weights and an impossible bias."""
        with float32_region(self.bias if self.tied else self.out.bias):  # float32 under autocast too
            if self.tied:
                w_out = torch.tanh(widen(self.embedding.target_weight()) @ widen(self.proj))  # (V, D)
                b_out = widen(self.bias)  # (V,)
            else:
                w_out, b_out = widen(self.out.weight), widen(self.out.bias)
            return self.pad_weight((w_out, b_out), n_oov)

    @staticmethod
    def pad_weight(weight, n_oov):
        """(W_out (V, D), b_out (V,)) -> the extended (X, D), (X,): zero rows, impossible bias."""
        w_out, b_out = weight
        if n_oov == 0:
            return w_out, b_out
        return F.pad(w_out, (0, 0, 0, n_oov)), F.pad(b_out, (0, n_oov), value=IMPOSSIBLE)  # (X, D), (X,)

    def _switch_and_copy(self, o, attn, first_pos):
        """log p(u=1), log p(u=0) (N, 1) and the copy probability at each source position (N, S),
        duplicates summed (one scatter_add onto each word's first position, read back everywhere).
        Call inside a float32 region with widened o and attn."""
        switch = self.switch(o)  # (N, 1)
        return F.logsigmoid(switch), F.logsigmoid(-switch), copy_at_sources(attn, first_pos)

    def gold_log_prob(self, o, attn, src_ex, first_pos, gold, weight=None, logits=None, return_p_copy=False):
        """log p(gold) under the mixture without building the (N, X) distribution.

        o (N, D); attn (N, S); src_ex (N, S); first_pos (N, S); gold (N,) extended ids;
        weight: an `out_weight()` result (unpadded) to reuse; logits: the (N, V) generation logits
        o W_out^T + b_out already computed from the same o and weight (overwritten), or None.
        Returns log p(gold) (N,) and the argmax of the full mixture (N,) (no gradient).
        Value and gradients equal those of `forward(...).gather(1, gold)`.
        With `return_p_copy`, also p(u=1) per row (N,), without gradient.
        """
        w_out, b_out = self.out_weight() if weight is None else weight
        with float32_region(o):
            o, attn, w_out, b_out, logits = (widen(x) for x in (o, attn, w_out, b_out, logits))
            # the switch gives p(u=1), the copy probability: generation is sigmoid of minus its logit
            switch = self.switch(o)  # (N, 1)
            ll, pred = gold_mixture(o, w_out, b_out, -switch, attn, src_ex, first_pos, gold, logits)
            if return_p_copy:
                return ll, pred, torch.sigmoid(switch.detach()).squeeze(1)  # (N,)
            return ll, pred

    def packed_out_weight(self, weight=None):
        """W_out, b_out (an `out_weight()` result, unpadded) packed for many small products
        without gradient (the scheduled-sampling rows of each step)."""
        w_out, b_out = self.out_weight() if weight is None else weight
        return PackedLinear(w_out.detach(), b_out.detach())

    @torch.no_grad()
    def draw(self, logits, o, attn, src_ex):
        """One sample of the mixture per row, drawn the way the model is defined: the switch
        u ~ Bernoulli(p(u=1)), then a source position ~ attn (u = 1) or a word ~ softmax(logits)
        (u = 0); the word's marginal is exactly p(y). logits (N, V): the generation logits
        o W_out^T + b_out (not modified); o (N, D); attn (N, S); src_ex (N, S).
        Returns the ids (N,) and the copy draws u (N,)."""
        with float32_region(o):
            logits, o, attn = widen(logits), widen(o), widen(attn)
            word = sample_rows((logits - logits.max(dim=1, keepdim=True).values).exp_())  # (N,)
            position = sample_rows(attn)  # (N,) padding (attention 0) is never drawn
            copied_word = src_ex.gather(1, position.unsqueeze(1)).squeeze(1)  # (N,)
            u = torch.rand(word.shape, device=o.device) < torch.sigmoid(self.switch(o)).squeeze(1)  # (N,)
            return torch.where(u, copied_word, word), u

    @torch.no_grad()
    def predict(self, o, attn, src_ex, first_pos, weight=None, logits=None):
        """argmax of the mixture over the extended vocabulary (N,), without the (N, X) distribution.
        weight: a `packed_out_weight()` result to reuse, or an unpadded `out_weight()` result;
        logits: the (N, V) generation logits if already computed (overwritten)."""
        with float32_region(o):
            o, attn, logits = widen(o), widen(attn), widen(logits)
            if logits is None:
                if not isinstance(weight, PackedLinear):
                    weight = PackedLinear(*(self.out_weight() if weight is None else weight), pack=False)
                logits = weight(o)  # (N, V)
            lse, top, top_id, at_src = logit_stats(logits, src_ex, IMPOSSIBLE)  # (N,) x3, (N, S)
            log_copy_switch, log_gen_switch, copy = self._switch_and_copy(o, attn, first_pos)
            return mixture_argmax(top, top_id, at_src, lse, log_gen_switch, log_copy_switch, copy, src_ex,
                                  logits.size(1))

    def forward(self, o, attn, src_ex, first_pos, n_oov, weight=None, return_p_copy=False):
        """o (N, D); attn (N, S) encoder attention (0 on padding); src_ex (N, S) extended ids;
        first_pos (N, S) from `first_occurrence(src_ex)`; n_oov: extended slots beyond V_tgt;
        weight: an `out_weight(n_oov)` result to reuse.  Returns log p (N, X), X = V_tgt + n_oov,
        and with `return_p_copy` also p(u=1) = 1 - p_gen per row (N,) (no gradient).
        """
        w_ext, b_ext = self.out_weight(n_oov) if weight is None else weight
        with float32_region(o):
            o, attn, w_ext, b_ext = widen(o), widen(attn), widen(w_ext), widen(b_ext)
            logits = F.linear(o, w_ext, b_ext)  # (N, X)
            log_copy_switch, log_gen_switch, _ = self._switch_and_copy(o, attn, first_pos)  # (N, 1) x2
            norm = torch.logsumexp(logits[:, : self.vocab_size], dim=1, keepdim=True)  # (N, 1)
            gen = logits - (norm - log_gen_switch)  # (N, X) log p(u=0) p(y | u=0)
            gen[:, self.vocab_size:] = IMPOSSIBLE  # an OOV slot is never generated, whatever the logits
            logp = scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos)  # (N, X)
            if return_p_copy:
                return logp, log_copy_switch.detach().squeeze(1).exp()  # (N,)
            return logp
