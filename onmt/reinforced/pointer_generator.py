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
reference the fused training and decoding paths are tested against (onmt/fused/gold_mixture.py:
log p(gold) and the argmax without the (N, X) distribution). `out_weight()` evaluates (13) from the
current parameters; callers that project many chunks of rows in one forward pass compute it once and
pass it in. No log(0) and no NaN even when a row's copy mass is zero.

Precision: under autocast (-amp) each method is a float32 island (onmt/modules/precision.py) that
widens o (which the LSTM and attention products give in bfloat16 / float16) and the attention on
entry, except for the product E_tgt W_proj of (13), which runs in autocast's precision, widened
before the tanh (the fused training path's logits products do the same: onmt/fused/gold_softmax.py).
Its outputs (log p, the logits, W_out) are float32; gradients reach o in o's own dtype.

Built with fused kernels (its Execution, onmt/execution.py; the default), `out_weight`
computes (13) with the tanh inside the product (onmt/fused/tied_weight.py; float32 on the CPU),
`draw` exponentiates through exp2 (onmt/fused/fast_exp.py) and `forward` writes the mixture in place
without autograd (onmt/fused/step_mixture.py); plain kernels: torch.exp and the out-of-place
scatter. The same values either way, up to float32 rounding in `draw`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.execution import as_execution
from onmt.fused import step_mixture, tied_weight
from onmt.fused.fast_exp import exp_shifted_
from onmt.modules import copy_mixture
from onmt.modules.copy_mixture import IMPOSSIBLE
from onmt.modules.precision import float32_region, widen
from onmt.modules.sampling import sample_rows


class PointerGenerator(nn.Module):
    """Maps o_t (N, D) and the encoder attention (N, S) to log p over the extended vocabulary."""

    def __init__(self, in_dim, tgt_vocab_size, embedding=None, tied=True, execution=None):
        super().__init__()
        self.execution = as_execution(execution)
        self._scatter = (step_mixture.scatter_mixture if self.execution.fused
                         else copy_mixture.scatter_mixture)
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

    @property
    def kernels(self):
        return self.execution.kernels

    def out_weight(self, n_oov=0):
        """W_out and b_out from the current parameters, padded to the extended vocabulary:
        (X, D) and (X,), the OOV slots with zero weights and an impossible bias."""
        if self.tied:
            emb = self.embedding.target_weight()  # (V, E) E_tgt
            # the tanh inside the product
            if self.execution.fused and tied_weight.fusable(emb, self.proj):
                # (13)
                return self.pad_weight((tied_weight.tanh_product(emb, self.proj), self.bias), n_oov)
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
            weights = (exp_shifted_(logits.clone(), top) if self.execution.fused
                       else torch.exp(logits - top))
            word = sample_rows(weights)  # (N,) from the (N, V) weights
            position = sample_rows(attn)  # (N,) padding (attention 0) is never drawn
            copied_word = src_ex.gather(1, position.unsqueeze(1)).squeeze(1)  # (N,)
            # (N,)
            u = torch.rand(word.shape, device=o.device) < torch.sigmoid(self.switch(o)).squeeze(1)
            return torch.where(u, copied_word, word), u

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
