"""Token generation and pointer (Paulus et al. 2017, 2.3-2.4): o_t -> log p over the extended
vocabulary.

With o_t = [h^d_t ; c^e_t ; c^d_t] (decoder.py), in the paper's numbers:

    (9)  p(y_t | u_t = 0) = softmax(W_out o_t + b_out)                  over V_tgt
    (10) p(y_t = x_i | u_t = 1) = a^e_ti                                 summed over positions
                                                                         holding y_t
    (11) p(u_t = 1) = sigmoid(W_u o_t + b_u)
    (12) p(y_t) = p(u_t = 1) p(y_t | u_t = 1) + p(u_t = 0) p(y_t | u_t = 0)
                                                                         over X = V_tgt + n_oov ids
    (13) W_out = tanh(W_emb W_proj)                                      W_emb = E_tgt,
                                                                         the shared rows

`forward` is this formula (in log space, the mixture by onmt/modules/copy_mixture.py) and the
reference the fused training and decoding paths are tested against (FusedPointerGenerator in
onmt/reinforced/fused.py: log p(gold) and the argmax without the (N, X) distribution, W_out with the
tanh inside the product, the mixture written in place, exp through exp2). `gold_log_prob`,
`predict` and `loop_product` are what the model and the rollouts ask of a generator; here they are
`forward` gathered at the gold, its argmax and a plain F.linear. `out_weight()` evaluates (13)
from the current parameters; callers that project many chunks of rows in one forward pass compute it
once and pass it in. No log(0) and no NaN even when a row's copy mass is zero.

Precision: under autocast (-amp) each method is a float32 island (onmt/modules/precision.py) that
widens o (which the LSTM and attention products give in bfloat16 / float16) and the attention on
entry, except for the product E_tgt W_proj of (13), which runs in autocast's precision, widened
before the tanh (the fused training path's logits products do the same: onmt/fused/gold_softmax.py).
Its outputs (log p, the logits, W_out) are float32; gradients reach o in o's own dtype.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.modules import copy_mixture
from onmt.modules.copy_mixture import IMPOSSIBLE
from onmt.modules.precision import float32_region, widen
from onmt.modules.sampling import sample_rows


class PointerGenerator(nn.Module):
    """Maps o_t (N, D) and the encoder attention (N, S) to log p over the extended vocabulary."""

    _scatter = staticmethod(copy_mixture.scatter_mixture)   # (10), (12): the copy mass into log p

    def __init__(self, in_dim, tgt_vocab_size, embedding=None, tied=True):
        super().__init__()
        self.tgt_vocab_size = tgt_vocab_size
        self.tied = tied
        self.switch = nn.Linear(in_dim, 1)  # W_u, b_u of (11)
        if tied:
            if embedding is None:
                raise ValueError("a tied output projection needs the (partial) target embedding")
            # PartialEmbedding; shared, registered again but one parameter
            self.embedding = embedding
            # (E, D) W_proj of (13)
            self.proj = nn.Parameter(torch.empty(embedding.embedding_dim, in_dim))
            self.bias = nn.Parameter(torch.zeros(tgt_vocab_size))  # (V,) b_out of (9)
            nn.init.xavier_uniform_(self.proj)
        else:
            self.out = nn.Linear(in_dim, tgt_vocab_size)  # free W_out (V, D), b_out of (9)

    def out_weight(self, n_oov=0):
        """W_out and b_out from the current parameters, padded to the extended vocabulary:
        (X, D) and (X,), the OOV slots with zero weights and an impossible bias."""
        if self.tied:
            emb = self.embedding.target_weight()  # (V, E) E_tgt
            # (V, D): under autocast (-amp) in its low precision, widened at once
            product = emb @ self.proj
        # float32 under autocast too
        with float32_region(self.bias if self.tied else self.out.bias):
            if self.tied:
                w_out = torch.tanh(widen(product))  # (V, D) (13)
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
        # (X, D), (X,)
        return F.pad(w_out, (0, 0, 0, n_oov)), F.pad(b_out, (0, n_oov), value=IMPOSSIBLE)

    @torch.no_grad()
    def draw(self, logits, o, attn, src_ex):
        """One sample of the mixture (12) per row, drawn the way the model is defined: the switch
        u ~ Bernoulli(p(u=1)) (11), then a source position ~ attn (u = 1) (10) or a word ~
        softmax(logits) (u = 0) (9); the word's marginal is exactly p(y). logits (N, V): the
        generation logits o W_out^T + b_out (not modified); o (N, D); attn (N, S); src_ex (N, S).
        Returns the ids (N,) and the copy draws u (N,)."""
        with float32_region(o):
            logits, o, attn = widen(logits), widen(o), widen(attn)
            top = logits.amax(dim=1, keepdim=True)  # (N, 1)
            weights = self._exp_shifted(logits, top)  # (N, V)
            word = sample_rows(weights)  # (N,) from the (N, V) weights
            position = sample_rows(attn)  # (N,) padding (attention 0) is never drawn
            copied_word = src_ex.gather(1, position.unsqueeze(1)).squeeze(1)  # (N,)
            # (N,)
            u = torch.rand(word.shape, device=o.device) < torch.sigmoid(self.switch(o)).squeeze(1)
            return torch.where(u, copied_word, word), u

    @staticmethod
    def _exp_shifted(logits, top):
        """exp(logits - top) (N, V), a new tensor: the weights `draw` samples a word from."""
        return torch.exp(logits - top)

    def forward(self, o, attn, src_ex, first_pos, n_oov, weight=None, return_p_copy=False):
        """o (N, D); attn (N, S) encoder attention (0 on padding); src_ex (N, S) extended ids;
        first_pos (N, S) from `first_occurrence(src_ex)`; n_oov: extended slots beyond V_tgt;
        weight: an `out_weight(n_oov)` result to reuse.  Returns log p (N, X), X = V_tgt + n_oov,
        and with `return_p_copy` also p(u=1) = 1 - p_gen per row (N,) (no gradient).
        """
        w_ext, b_ext = self.out_weight(n_oov) if weight is None else weight  # (13)
        with float32_region(o):
            o, attn, w_ext, b_ext = widen(o), widen(attn), widen(w_ext), widen(b_ext)
            logits = F.linear(o, w_ext, b_ext)  # (N, X) (9) W_out o_t + b_out
            switch = self.switch(o)  # (N, 1) (11) the logit of p(u=1)
            # (N, 1) x2
            log_copy_switch, log_gen_switch = F.logsigmoid(switch), F.logsigmoid(-switch)
            norm = torch.logsumexp(logits[:, : self.tgt_vocab_size], dim=1, keepdim=True)  # (N, 1)
            gen = logits - (norm - log_gen_switch)  # (N, X) log p(u=0) p(y | u=0), (9)
            # an OOV slot is never generated, whatever the logits
            gen[:, self.tgt_vocab_size:] = IMPOSSIBLE
            # (N, X) (10) and (12)
            logp = self._scatter(gen, log_copy_switch, attn, src_ex, first_pos)
            if return_p_copy:
                return logp, log_copy_switch.detach().squeeze(1).exp()  # (N,)
            return logp

    def gold_log_prob(self, o, attn, src_ex, first_pos, gold, n_oov, weight=None, logits=None,
                      return_p_copy=False):
        """log p(gold) (N,) and the argmax of the mixture (N,) (no gradient): `forward` gathered at
        gold (N,) extended ids. weight: an unpadded `out_weight()` result to reuse; logits: the
        generation logits if already computed (a fused generator reuses them; unused here). With
        `return_p_copy` also p(u=1) (N,) (no gradient)."""
        w_out, b_out = self.out_weight() if weight is None else weight  # (V, D), (V,)
        logp, p_copy = self(o, attn, src_ex, first_pos, n_oov,
                            weight=self.pad_weight((w_out, b_out), n_oov), return_p_copy=True)
        ll = logp.gather(1, gold.unsqueeze(1)).squeeze(1)  # (N,)
        pred = logp.detach().argmax(1)  # (N,)
        return (ll, pred, p_copy) if return_p_copy else (ll, pred)

    @torch.no_grad()
    def predict(self, o, attn, src_ex, first_pos, n_oov, weight=None, logits=None):
        """The argmax of the mixture over the extended vocabulary (N,): `forward`'s. weight: an
        unpadded `out_weight()` result (or, for a fused generator, its `loop_product`); logits: the
        generation logits if already computed (unused here)."""
        w_out, b_out = self.out_weight() if weight is None else weight  # (V, D), (V,)
        return self(o, attn, src_ex, first_pos, n_oov,
                    weight=self.pad_weight((w_out.detach(), b_out.detach()), n_oov)).argmax(1)

    def loop_product(self, weight):
        """o (N, D) -> o W_out^T + b_out (N, V) without gradient for the many small products of a
        pass (the rollouts' steps), from an unpadded `out_weight()` result: F.linear."""
        w_out, b_out = (w.detach() for w in weight)
        return lambda o: F.linear(o, w_out, b_out)
