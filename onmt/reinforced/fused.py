"""The reinforced model's fast paths: subclasses of its plain classes that override whole methods
with onmt/fused's kernels (the table in onmt/fused/__init__.py says which formula each replaces and
which test proves them equal). The registry builds them for kernels "fused" (onmt/model_builder.py,
the decoder through onmt/models/components.py); nothing else chooses them.

    FusedPointerGenerator   W_out = tanh(E_tgt W_proj) with the tanh inside the product
                            (tied_weight.py); exp through exp2 in `draw` (fast_exp.py); the mixture
                            written in place without autograd (step_mixture.py); log p(gold) and the
                            argmax without the (N, X) distribution (gold_mixture.py); a decoding
                            step's distribution or step scores on the packed W_out
    FusedReinforcedDecoder  dropout masks from torch.rand (dropout.py); the per-pass embedding
                            lookup and encoder-side products (step_embedding.py, step_source.py);
                            prepared LSTM gates in a model decoding in a chosen precision
                            (low_precision.decoding_gates)
    FusedReinforcedModel    the ML term from the gold-only pass; scheduled sampling's argmax on
                            W_out packed once per pass; decoding on W_out packed once per set of
                            parameters, the encoder attention's scores in BLAS's fast layout
                            (step_source.DecodingSource), the searches' top K without (B, X) written
"""
from dataclasses import replace

import torch
import torch.nn.functional as F

from onmt.execution import as_execution
from onmt.fused import step_mixture, tied_weight
from onmt.fused.dropout import Dropout
from onmt.fused.fast_exp import exp_shifted_
from onmt.fused.gold_mixture import (
    as_product,
    gold_mixture,
    logits_on,
    packed_weight,
    predict_from_logits,
    training_loop_product,
)
from onmt.fused.low_precision import decoding_gates
from onmt.fused.mixture_scores import MixtureScores
from onmt.fused.packed_linear import cached_while_unchanged, drop_cached
from onmt.fused.step_embedding import StepEmbedding
from onmt.fused.step_source import DecodingSource, StepSource
from onmt.interface import gold_targets
from onmt.models.components import register_decoder
from onmt.modules.copy_mixture import repeat_per_step
from onmt.modules.precision import autocast_dtype, float32_region, widen
from onmt.reinforced.decoder import ReinforcedDecoder
from onmt.reinforced.model import ReinforcedModel, step_attns
from onmt.reinforced.pointer_generator import PointerGenerator


class FusedPointerGenerator(PointerGenerator):
    """PointerGenerator (eqs. 9-13) with the fused kernels; the same values, up to float32
    rounding in `draw` and the products' summation order."""

    _scatter = staticmethod(step_mixture.scatter_mixture)   # in place without autograd

    def out_weight(self, n_oov=0):
        """(13) with the tanh inside the product where tied_weight applies (float32 on the CPU);
        else the plain formula."""
        if self.tied:
            emb = self.embedding.target_weight()  # (V, E) E_tgt
            if tied_weight.fusable(emb, self.proj):
                return self.pad_weight((tied_weight.tanh_product(emb, self.proj), self.bias), n_oov)
        return super().out_weight(n_oov)

    @staticmethod
    def _exp_shifted(logits, top):
        return exp_shifted_(logits.clone(), top)  # (N, V) through exp2

    def gold_log_prob(self, o, attn, src_ex, first_pos, gold, n_oov=0, weight=None, logits=None,
                      return_p_copy=False):
        """PointerGenerator.gold_log_prob without the (N, X) distribution (gold_mixture): the same
        values and gradients. logits: the (N, V) generation logits o W_out^T + b_out already
        computed from the same o and weight (overwritten), or None; n_oov is not needed."""
        w_out, b_out = self.out_weight() if weight is None else weight
        low = autocast_dtype(o)  # -amp: the vocabulary products in its precision, all else float32
        with float32_region(o):
            o, attn, w_out, b_out, logits = (widen(x) for x in (o, attn, w_out, b_out, logits))
            # the switch gives p(u=1), the copy probability: generation is sigmoid of minus it
            switch = self.switch(o)  # (N, 1)
            ll, pred = gold_mixture(o, w_out, b_out, -switch, attn, src_ex, first_pos, gold,
                                    logits, low)  # (N,) x2
            if return_p_copy:
                return ll, pred, torch.sigmoid(switch.detach()).squeeze(1)  # (N,)
            return ll, pred

    @torch.no_grad()
    def predict(self, o, attn, src_ex, first_pos, n_oov=0, weight=None, logits=None):
        """PointerGenerator.predict without the (N, X) distribution (mixture_argmax). weight: a
        `loop_product` / packed_weight result or an unpadded `out_weight()` result; logits: the
        (N, V) generation logits if already computed (overwritten)."""
        with float32_region(o):
            o, attn, logits = widen(o), widen(attn), widen(logits)
            if logits is None:
                logits = as_product(self.out_weight() if weight is None else weight)(o)  # (N, V)
            return predict_from_logits(logits, self.switch(o), attn, src_ex, first_pos)  # (N,)

    def loop_product(self, weight):
        """W_out packed once for a pass's many small products (or cast to autocast's precision
        under -amp): gold_mixture.training_loop_product."""
        return training_loop_product(weight)

    @torch.no_grad()
    def step_log_probs(self, o, attn, src_ex, first_pos, n_oov, packed):
        """`self(o, attn, src_ex, first_pos, n_oov, return_p_copy=True)` without autograd on W_out
        packed (a packed_weight of the unpadded W_out): log p (N, X) in row blocks with the copy
        mass scattered in place (step_mixture), and p(u=1) (N,)."""
        with float32_region(o):
            logits, attn, log_copy_switch, log_gen_switch = self._step_pieces(o, attn, packed)
            # (N, X) log p(u=0) p(y | u=0)
            gen = step_mixture.generation_log_probs(logits, log_gen_switch, n_oov)
            # (N, X) (10) and (12)
            logp = step_mixture.scatter_mixture(gen, log_copy_switch, attn, src_ex, first_pos)
            return logp, log_copy_switch.squeeze(1).exp()  # (N, X), (N,)

    @torch.no_grad()
    def step_scores(self, o, attn, src_ex, first_pos, n_oov, packed):
        """`step_log_probs` as a mixture_scores.MixtureScores (the searches' top K without the
        (N, X) log-probabilities written) and p(u=1) (N,)."""
        with float32_region(o):
            logits, attn, log_copy_switch, log_gen_switch = self._step_pieces(o, attn, packed)
            scores = MixtureScores(logits, log_gen_switch, log_copy_switch, attn, src_ex,
                                   first_pos, n_oov)
            return scores, log_copy_switch.squeeze(1).exp()  # (N,)

    def _step_pieces(self, o, attn, packed):
        """A step's float32 pieces, inside a float32 region: the logits (N, V) W_out o_t + b_out
        (eq. 9), the attention (N, S), log p(u=1) and log p(u=0) (N, 1) each (eq. 11)."""
        o, attn = widen(o), widen(attn)
        switch = self.switch(o)  # (N, 1) (11) the logit of p(u=1)
        # (N, V), (N, S), (N, 1) x2
        return packed(o), attn, F.logsigmoid(switch), F.logsigmoid(-switch)


@register_decoder("reinforced", fused=True)
class FusedReinforcedDecoder(ReinforcedDecoder):
    """ReinforcedDecoder with the fused dropout, per-pass products and prepared decoding gates."""

    dropout_cls = Dropout

    def __init__(self, *args, execution=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.execution = as_execution(execution)

    def _gates(self, x, hidden):
        """The prepared LSTM gates of a model decoding in a chosen precision, without autograd
        (low_precision.decoding_gates), else None."""
        return decoding_gates(self.execution, self.rnn, x, hidden[0])

    def step_embedding(self):
        """The input embedding for a whole decoding loop: the same lookups as `self.embeddings`,
        with one gradient write into the matrix per pass instead of one per step
        (onmt/fused/step_embedding.py)."""
        return StepEmbedding(self.embeddings.target_weight(), self.embeddings.full.padding_idx)

    def step_source(self, state):
        """The encoder-side products for a whole teacher-forced pass from `state`
        (onmt/fused/step_source.py)."""
        return StepSource(state.enc_keys, state.memory)


class FusedReinforcedModel(ReinforcedModel):
    """ReinforcedModel with the fused training, rollout and decoding paths (module docstring)."""

    dropout_cls = Dropout
    generator_cls = FusedPointerGenerator

    def execution_notes(self):
        """The fused paths of the model's execution that do not apply to it, each with why
        (interface.py)."""
        notes = []
        if self.sampling_schedule.rate > 0 and not self._fused_argmax():
            notes.append("scheduled sampling from the full distribution: the fused argmax needs "
                         "-scheduled_sampling_mode argmax")
        if self.execution.compile == "mlp-scores":
            notes.append("compile mlp-scores: this model has no mlp attention, nothing is compiled")
        return notes

    def _fused_argmax(self):
        """Whether scheduled sampling takes the argmax without the (N, X) distribution."""
        return self.sampling_mode == "argmax"

    def train(self, mode=True):
        # no stale or idle copy of W_out while training; eval() keeps it (translate() calls eval())
        if mode:
            drop_cached(self)
        return super().train(mode)

    # ------------------------------------------------------------------ decoding
    def init_state(self, batch, enc):
        """Without autograd (beam search) W_out packed for the steps' products, once per set of
        parameters (`_decoding_weight`); else the plain state."""
        if not self.execution.decoding_only():
            return super().init_state(batch, enc)
        state = self.decoder.init_state(enc, batch.src_ex, batch.n_oov)
        weight, packed = self._decoding_weight()
        return replace(state, out_weight=weight, out_packed=packed)

    def _decoding_weight(self):
        """W_out, b_out (V, 3H), (V,) without gradient and their PackedLinear (in the model's
        decoding precision: low_precision.prepared_linear), kept while the generator's parameters
        are unchanged (packed_linear.cached_while_unchanged)."""
        def build():
            weight = self.generator.out_weight()  # (V, 3H), (V,)
            return weight, packed_weight(weight, self.execution.decoding_precision)
        return cached_while_unchanged(self, list(self.generator.parameters()), build)

    def _decoder_step(self, inputs, state):
        """Without autograd the encoder attention's scores in BLAS's fast layout
        (step_source.DecodingSource)."""
        source = (DecodingSource(state.enc_keys, state.memory, state.source_rows)
                  if self.execution.decoding_only() else None)
        return self.decoder.step(inputs, state, source=source, return_intra=True)

    def decode_step(self, inputs, state):
        """ReinforcedModel.decode_step; on the packed W_out without autograd through the
        generator's step_log_probs."""
        if not (self.execution.decoding_only() and state.out_packed is not None):
            return super().decode_step(inputs, state)
        o_t, attn, state, intra = self._decoder_step(inputs, state)
        logp, p_copy = self.generator.step_log_probs(
            o_t, attn, state.per_row("src_ex"), state.per_row("first_pos"), state.n_oov,
            state.out_packed)  # (B, X), (B,)
        return logp, state, step_attns(attn, p_copy, intra)

    def decode_step_scores(self, inputs, state):
        """decode_step with log p as a step-scores object (interface.py): on the packed W_out
        without autograd a mixture_scores.MixtureScores (the searches' top K without the (B, X)
        log-probabilities written), elsewhere decode_step's tensor as a DenseScores."""
        if not (self.execution.decoding_only() and state.out_packed is not None):
            return super().decode_step_scores(inputs, state)
        o_t, attn, state, intra = self._decoder_step(inputs, state)
        scores, p_copy = self.generator.step_scores(
            o_t, attn, state.per_row("src_ex"), state.per_row("first_pos"), state.n_oov,
            state.out_packed)  # (B, X) scores, (B,)
        return scores, state, step_attns(attn, p_copy, intra)

    # ------------------------------------------------------------------ training
    def pass_step_args(self, state):
        """The per-pass lookups and products of the decoder (step_embedding.py, step_source.py)."""
        return dict(embed=self.decoder.step_embedding(), source=self.decoder.step_source(state))

    def _loop_weight(self, enc, weight):
        """Scheduled sampling's argmax on W_out packed once per pass (pass_loop_product); sampling
        from the full distribution reads the plain weight."""
        if self._fused_argmax():
            return self.pass_loop_product(enc)
        return super()._loop_weight(enc, weight)

    def gold_log_likelihood(self, batch, enc=None):
        """log p(gold) (B, T-1) (0 at padding), the argmax of the mixture (B, T-1) and the attns of
        `forward`, without any (B*(T-1), X) distribution (the generator's gold_log_prob); the same
        values and gradients as `forward` + gather. attns also holds "p_copy" (B, T-1), p(u=1) at
        every step (no gradient; padding steps included)."""
        out, attns, state, weight, loop_weight = self._teacher_forcing(batch, enc)
        B, n_steps, S = attns["std"].shape
        # the logits o W_out^T + b_out on the weight scheduled sampling packed for its rows
        # (oneDNN's blocked layout: ~20 % faster than the column-blocked addmm, and already paid
        # for; under -amp in bfloat16, the same values as gold_log_softmax's own product); gradients
        # are gold_log_softmax's own products either way
        product = loop_weight if loop_weight is not None and self._fused_argmax() else None
        logits = logits_on(product, out) if product is not None else None  # (B*(T-1), V)
        gold, mask = gold_targets(batch, self.tgt_vocab_size + state.n_oov)  # (B, T-1)
        src_ex, first_pos = (repeat_per_step(state.src_ex, n_steps),
                             repeat_per_step(state.first_pos, n_steps))
        ll, pred, p_copy = self.generator.gold_log_prob(
            out, attns["std"].reshape(B * n_steps, S), src_ex, first_pos, gold.reshape(-1),
            state.n_oov, weight=weight, logits=logits, return_p_copy=True)  # (B*(T-1),) x3
        attns["p_copy"] = p_copy.view(B, n_steps)  # (B, T-1)
        return ll.view(B, n_steps).masked_fill(~mask, 0.0), pred.view(B, n_steps), attns
