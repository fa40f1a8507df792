"""The baselines' fast paths: subclasses of the plain classes of this package that override whole
methods with onmt/fused's kernels (the table in onmt/fused/__init__.py says which formula each
replaces and which test proves them equal). The registry builds them for kernels "fused"
(onmt/model_builder.py; the encoder and decoder through components.py); nothing else chooses them.

    FusedRNNEncoder     the RNN of a model decoding at -precision bf16 / int8 lowered
                        (low_precision.run_rnn)
    FusedRNNDecoder     See et al.'s teacher-forced pass (a 1-layer LSTM, input feeding, mlp
                        attention) as one autograd function (decoder_pass.py), the attention of the
                        other passes per pass (step_attention.StepAttention), the mlp score in row
                        blocks or compiled, dropout masks from torch.rand, prepared LSTM gates
    FusedNMTModel       a decoding step's vocabulary product packed once in the decoding precision
    FusedCopyNMTModel   and the copy generator's mixture in row blocks in place, its step scores
                        without (B, X) written (`copy_step_scores`), its training path the gold-only
                        mixture (`copy_gold_log_prob`)
"""
from dataclasses import replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from onmt.constants import PAD
from onmt.execution import as_execution
from onmt.fused import step_mixture
from onmt.fused.decoder_pass import lstm_mlp_decoder_pass
from onmt.fused.dropout import Dropout, dropout_mask
from onmt.fused.gold_mixture import gold_mixture
from onmt.fused.low_precision import decoding_gates, encoder_lowered, prepared_linear, run_rnn
from onmt.fused.mixture_scores import MixtureScores
from onmt.fused.packed_linear import cached_while_unchanged, drop_cached
from onmt.fused.step_attention import StepAttention, compiled_mlp_scores, mlp_scores_blocked
from onmt.interface import gold_targets
from onmt.models.components import register_decoder, register_encoder
from onmt.models.rnn_decoder import DecoderOutput, RNNDecoder
from onmt.models.rnn_encoder import RNNEncoder
from onmt.models.seq2seq import CopyNMTModel, NMTModel
from onmt.modules.copy_generator import vocab_logits
from onmt.modules.precision import autocast_dtype, float32_region, widen
from onmt.modules.step_scores import DenseScores


@register_encoder("rnn", fused=True)
class FusedRNNEncoder(RNNEncoder):
    """RNNEncoder whose RNN runs lowered without autograd in a model decoding in bf16 or int8."""

    def __init__(self, *args, execution=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.execution = as_execution(execution)

    def _run_rnn(self, packed):
        """Without autograd, in a model decoding in bf16 or int8 (-precision: the execution),
        lowered (low_precision.run_rnn: bfloat16 autocast or PyTorch's dynamic int8 LSTM), its
        outputs float32; else the plain RNN."""
        if not encoder_lowered(self.execution, self, packed):
            return super()._run_rnn(packed)
        return run_rnn(self.rnn, packed, self.execution.precision)


@register_decoder("rnn", fused=True)
class FusedRNNDecoder(RNNDecoder):
    """RNNDecoder with the fused teacher-forced pass, attention scores, dropout and decoding gates
    (module docstring)."""

    dropout_cls = Dropout

    def __init__(self, rnn_type, num_layers, hidden_size, embeddings, attn_type="general",
                 execution=None, **kwargs):
        execution = as_execution(execution)
        compiled = execution.compile == "mlp-scores" and attn_type == "mlp"
        super().__init__(rnn_type, num_layers, hidden_size, embeddings, attn_type=attn_type,
                         mlp_score=compiled_mlp_scores() if compiled else mlp_scores_blocked,
                         **kwargs)
        self.execution = execution

    def fused_pass_problem(self):
        """None where a teacher-forced pass can run as the fused decoder pass (See et al.'s
        structure: a one-layer LSTM, input feeding, mlp attention; onmt/fused/decoder_pass.py), else
        why not."""
        found = [what for what, wrong in (
            ("no attention" if self.attn is None else f"{self.attn.attn_type} attention",
             self.attn is None or self.attn.attn_type != "mlp"),
            ("no input feeding", not self.input_feed),
            (type(self.rnn).__name__, not isinstance(self.rnn, nn.LSTM)),
            (f"{self.num_layers} layers", self.num_layers != 1)) if wrong]
        if not found:
            return None
        return ("the fused decoder pass needs a 1-layer LSTM with input feeding and mlp attention "
                f"(this decoder: {', '.join(found)})")

    def execution_notes(self):
        """The fused paths of this decoder's Execution that do not apply to it, each with why
        (build_model logs them)."""
        notes = []
        problem = self.fused_pass_problem()
        if problem:
            notes.append(f"step-loop fallback: {problem}")
        if self.execution.prepared_decoding and not isinstance(self.rnn, nn.LSTM):
            notes.append("no prepared decoding gates: they are an LSTM's "
                         f"(this decoder: {type(self.rnn).__name__})")
        if (self.execution.compile == "mlp-scores"
                and (self.attn is None or self.attn.attn_type != "mlp")):
            notes.append("compile mlp-scores: this decoder has no mlp attention, "
                         "nothing is compiled")
        if self.execution.compile == "decoder-step" and not problem:
            notes.append("compile decoder-step: the fused decoder pass of training runs eagerly")
        return notes

    def _gates(self, x, hidden):
        """The prepared LSTM gates of a model decoding in a chosen precision, without autograd
        (low_precision.decoding_gates), else None."""
        return decoding_gates(self.execution, self.rnn, x, hidden[0])

    def step_attention(self, state):
        """The fused attention of a whole teacher-forced pass from `state`
        (onmt/fused/step_attention.py): under autograd in float32 only (its backward is the gain,
        Execution.training_pass); None otherwise."""
        if self.attn is None or not self.execution.training_pass(state.memory):
            return None
        return StepAttention(state.keys, state.memory)

    def _dropout_masks(self, T, B, like):
        """nn.Dropout's scaled masks of the T steps' attentional vectors (T, B, H), or None
        (no dropout)."""
        if not self.training or self.dropout.p == 0:
            return None
        if self.dropout.p >= 1:
            return like.new_zeros(T, B, self.hidden_size)  # (T, B, H)
        return dropout_mask((T, B, self.hidden_size), self.dropout.p, like)  # (T, B, H)

    def forward(self, emb, state):
        """Teacher forcing: See et al.'s decoder (one-layer LSTM, input feeding, mlp attention) over
        the whole pass as one autograd function (onmt/fused/decoder_pass.py) when gradients are
        wanted in float32 or float64 without autocast (Execution.training_pass), where its
        structure allows (fused_pass_problem); else the plain step loop (with `step_attention`)."""
        memory = state.memory
        if (self.fused_pass_problem() is not None or emb.size(1) == 0
                or not self.execution.training_pass(memory, emb,
                                                    dtypes=(torch.float32, torch.float64))):
            return super().forward(emb, state)
        B, T, _ = emb.shape
        drop = self._dropout_masks(T, B, emb)
        h0, c0 = state.hidden
        out, rnn_out, context, attn, coverage, h, c, cov = lstm_mlp_decoder_pass(
            emb, h0[0], c0[0], state.input_feed, state.coverage, state.keys, memory, state.mask,
            drop, self.rnn, self.attn)
        dec = DecoderOutput(out=out, rnn_out=rnn_out, context=context, emb=emb, attn=attn,
                            coverage=coverage)
        return dec, replace(state, hidden=(h.unsqueeze(0), c.unsqueeze(0)), input_feed=out[:, -1],
                            coverage=cov)


class FusedNMTModel(NMTModel):
    """NMTModel whose decoding step's vocabulary product is packed once in the decoding
    precision."""

    dropout_cls = Dropout

    def _decoding_projection(self):
        """Without autograd the generator's vocabulary projection as a PackedLinear (in the model's
        decoding precision: low_precision.prepared_linear), kept while its weight and bias are
        unchanged (packed_linear.cached_while_unchanged; a tied weight is the embedding's); under
        autograd None (the generator's own)."""
        if not self.execution.decoding_only():
            return None
        proj = self.generator.linear
        weight, bias = proj.weight, proj.bias  # (V, H), (V,)
        return cached_while_unchanged(
            self, [weight, bias],
            lambda: prepared_linear(weight, bias, self.execution.decoding_precision))

    def train(self, mode=True):
        # no stale or idle packed weight while training; eval() keeps it (translate() calls eval())
        if mode:
            drop_cached(self)
        return super().train(mode)

    def execution_notes(self):
        """The fused paths of the model's execution that do not apply to it, each with why
        (interface.py)."""
        return self.decoder.execution_notes()


class FusedCopyNMTModel(FusedNMTModel, CopyNMTModel):
    """CopyNMTModel with FusedNMTModel's decoding product, the copy mixture in row blocks in place,
    step scores without (B, X) written and the gold-only training path."""

    COPY_MIXTURE = dict(generation=step_mixture.generation_log_probs,
                        scatter=step_mixture.scatter_mixture)

    def decode_step_scores(self, inputs, state):
        """decode_step with log p as step scores (interface.py): without autograd a
        mixture_scores.MixtureScores (the searches' top K without the (B, X) log-probabilities
        written), under autograd decode_step's tensor as a DenseScores."""
        if not self.execution.decoding_only():
            logp, state, attns = self.decode_step(inputs, state)
            return DenseScores(logp.float()), state, attns
        dec, state = self.decoder.step(self.embed_target(inputs), state)
        scores, p_copy = copy_step_scores(self.generator, dec, state.per_row("src_ex"),
                                          state.per_row("first_pos"), state.n_oov,
                                          self._decoding_projection())
        return scores, state, self._attns(dec, p_copy)

    def gold_log_likelihood(self, batch, enc=None):
        """log p(gold) (B, T-1) with 0 at padding, the argmax (B, T-1) and the attns, without the
        (B, T-1, X) distribution (`copy_gold_log_prob`): the same values and gradients as
        `forward` + gather."""
        state = self.init_state(batch, enc if enc is not None else self.encode(batch))
        dec, state = self.decoder(self.embed_target(batch.tgt[:, :-1]), state)
        gold, mask = gold_targets(batch, self.tgt_vocab_size + state.n_oov)  # (B, T-1)
        # captured (-cuda_graphs): every row, padding too, rather than a nonzero of the real ones
        rows = None if self.execution.capture != "off" else mask
        ll, pred, p_copy = copy_gold_log_prob(self.generator, dec, state.src_ex, state.first_pos,
                                              gold, return_p_copy=True, mask=rows)  # (B, T-1) x3
        return ll.masked_fill(~mask, 0.0), pred, self._attns(dec, p_copy)


def copy_gold_log_prob(generator, dec, src_ex, first_pos, gold, return_p_copy=False, mask=None):
    """The training path of `generator` (a CopyGenerator): log p(gold) (B, T) and the argmax (B, T)
    of the mixture for a teacher-forced sequence, without the (B, T, X) distribution; same values
    and gradients as `generator(...)` gathered at gold. dec: DecoderOutput (B, T, ...);
    src_ex, first_pos (B, S); gold (B, T) extended ids. With `return_p_copy` also 1 - p_gen
    (B, T) (no gradient). mask (B, T): the positions to compute (the real tokens); the others (the
    padding, a fifth of Gigaword's batches) cost nothing and read 0 (log p and p_copy) and PAD
    (argmax).
    """
    B, T = gold.shape
    S = src_ex.size(-1)
    # (N,) the rows computed, example-major (row b*T + t), and each one's example
    rows = (torch.arange(B * T, device=gold.device) if mask is None
            else mask.reshape(-1).nonzero().squeeze(1))
    example = torch.div(rows, T, rounding_mode="floor")  # (N,)
    # -amp: the vocabulary products in its precision, all else in float32
    low = autocast_dtype(dec.out)
    with float32_region(dec.out):
        # (B, T, 2H+E)
        features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)
        features = features.reshape(B * T, -1).index_select(0, rows)  # (N, 2H+E)
        gen_logit = generator.switch(features).float()  # (N, 1)
        pad_col = torch.zeros_like(generator.linear.bias, dtype=torch.bool)
        pad_col[PAD] = True
        # PAD never generated
        bias = generator.linear.bias.masked_fill(pad_col, torch.finfo(torch.float32).min)
        out = widen(dec.out).reshape(B * T, -1).index_select(0, rows)  # (N, D)
        attn = dec.attn.float().reshape(B * T, S).index_select(0, rows)  # (N, S)
        ll, pred = gold_mixture(out, generator.linear.weight, bias, gen_logit, attn,
                                src_ex.index_select(0, example), first_pos.index_select(0, example),
                                gold.reshape(B * T).index_select(0, rows), product_dtype=low)

        def per_position(values, fill):  # (N,) at the computed rows -> (B, T), `fill` elsewhere
            return values.new_full((B * T,), fill).index_copy(0, rows, values).view(B, T)

        ll, pred = per_position(ll, 0.0), per_position(pred, PAD)  # (B, T) x2
        if return_p_copy:
            # (B, T)
            return ll, pred, per_position(torch.sigmoid(-gen_logit.detach()).squeeze(1), 0.0)
        return ll, pred


@torch.no_grad()
def copy_step_scores(generator, dec, src_ex, first_pos, n_oov, linear):
    """See et al.'s CopyGenerator at one decoding step (dec: its DecoderOutput, (N, ...)) as a
    mixture_scores.MixtureScores, and 1 - p_gen (N,). linear: the vocabulary projection to use
    (decoding's packed copy of generator.linear). The same switch, logits (PAD at the lowest value)
    and mixture as CopyGenerator.forward (eqs. 4, 8, 9)."""
    with float32_region(dec.out):
        # (N, 2H+E)
        features = torch.cat([widen(dec.context), widen(dec.rnn_out), widen(dec.emb)], dim=-1)
        switch = generator.switch(features).float()  # (N, 1) logit of p_gen (eq. 8)
        logits = vocab_logits(linear, widen(dec.out))  # (N, V) eq. 4 before the softmax
        scores = MixtureScores(logits, F.logsigmoid(switch), F.logsigmoid(-switch),
                               dec.attn.float(), src_ex, first_pos, n_oov)
        return scores, torch.sigmoid(-switch).squeeze(1)  # (N,)
