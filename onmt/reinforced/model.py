"""Paulus, Xiong & Socher (2017)'s deep reinforced model behind the common model interface.

Encoder: shared embedding -> (bi)LSTM (onmt.models.rnn_encoder). Decoder: LSTM with intra-temporal
and intra-decoder attention (decoder.py, intra_attention.py: eqs. 2-8). Output: pointer-generator
with the tied projection W_out = tanh(E_tgt W_proj) (pointer_generator.py: eqs. 9-13).

Performance (docs/DESIGN.md section 4): in `forward` the generator over V_tgt runs once, after the
decoding loop, on all B*(T-1) rows; inside the loop only the rows whose next input is
scheduled-sampled get a distribution (without gradient: the choice is discrete), through a W_out
packed once per forward pass for oneDNN's skinny products (onmt/fused/packed_linear.py: 4-5x faster
than addmm for the few rows of a step on CPU). The training and rollout paths use the fused kernels
of onmt/fused/ (the table in its __init__.py); the per-step-generator baselines they are measured
against live in bench/reinforced_step_bench.py.

`execution` (an Execution, onmt/execution.py: kernels, decoding precision, compile) is fixed
when the model is built and given to its encoder, decoder and generator. With plain kernels every
path is the formula: the teacher forcing through `decoder.step` and `generator.forward` (the ML loss
gathers the gold from the full distribution, scheduled sampling takes its argmax), decoding with
W_out unpacked, rollouts as rollout.py says.
"""
from dataclasses import replace

import torch
import torch.nn as nn

from onmt.execution import as_execution
from onmt.fused.dropout import Dropout
from onmt.fused.gold_mixture import (
    logits_on,
    packed_out_weight,
    pointer_generator_gold_log_prob,
    pointer_generator_predict,
    training_loop_product,
)
from onmt.fused.packed_linear import cached_while_unchanged, drop_cached
from onmt.fused.step_mixture import pointer_generator_step_log_probs, pointer_generator_step_scores
from onmt.fused.step_source import DecodingSource
from onmt.interface import gold_targets, per_pass
from onmt.models.components import build_decoder, build_encoder
from onmt.models.generic import ModelDefaults, gold_from_forward
from onmt.modules.copy_mixture import repeat_per_step
from onmt.modules.embeddings import Embeddings
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.modules.sampling import SamplingSchedule, sample_rows
from onmt.modules.step_scores import DenseScores
from onmt.reinforced.pointer_generator import PointerGenerator
from onmt.reinforced.rollout import rollout as lockstep_rollout


class ReinforcedModel(ModelDefaults, nn.Module):
    copy = True
    ENCODER, DECODER = "rnn", "reinforced"   # from_opt's components (onmt/models/components.py)
    # state_dict key prefixes renamed since checkpoints were first written: old -> new
    RENAMED_KEYS = (("decoder.embedding.", "decoder.embeddings."),)

    def __init__(self, encoder, decoder, generator, scheduled_sampling=0.0, sampling_mode="argmax",
                 execution=None):
        """scheduled_sampling: a probability, or a SamplingSchedule (onmt/modules/sampling.py) that
        `begin_training_step` follows; `self.scheduled_sampling` is the probability of the step."""
        super().__init__()
        if sampling_mode not in ("argmax", "sample"):
            raise ValueError(f"sampling_mode must be argmax or sample, got {sampling_mode}")
        if not isinstance(scheduled_sampling, SamplingSchedule):
            scheduled_sampling = SamplingSchedule(scheduled_sampling)
        self.sampling_schedule = scheduled_sampling
        self.execution = execution = as_execution(execution)
        if {encoder.execution, decoder.execution, generator.execution} != {execution}:
            raise ValueError(f"a model of {execution} needs an encoder, decoder and generator of "
                             "the same")
        self.encoder, self.decoder, self.generator = encoder, decoder, generator
        # until the trainer says which step it is
        self.scheduled_sampling = scheduled_sampling.at(1)
        self.sampling_mode = sampling_mode

    @classmethod
    def from_opt(cls, opt, vocabs, execution=None):
        """The model of `opt` with each module's own initialization and `execution` (module
        docstring); -param_init is applied by onmt.model_builder (build_model / init_parameters),
        as for every family."""
        # shared vocabulary and equal layer counts: checked by opts.validate_model_opts and the
        # registry's check_data before any model is built
        execution = as_execution(execution)
        dropout_cls = Dropout if execution.fused else nn.Dropout
        embeddings = Embeddings(len(vocabs.src), opt.word_vec_size, dropout=opt.dropout,
                                dropout_cls=dropout_cls)
        # the paper's encoder is an LSTM without a bridge whatever the options (they are refused)
        encoder = build_encoder(cls.ENCODER, opt, embeddings, execution, rnn_type="LSTM",
                                bridge=False)
        partial = PartialEmbedding(embeddings.lut, len(vocabs.tgt))
        decoder = build_decoder(cls.DECODER, opt, partial, execution)
        generator = PointerGenerator(decoder.output_size, len(vocabs.tgt), embedding=partial,
                                     tied=not opt.no_tied_output, execution=execution)
        schedule = SamplingSchedule(opt.scheduled_sampling, opt.scheduled_sampling_start,
                                    opt.scheduled_sampling_ramp)
        return cls(encoder, decoder, generator, scheduled_sampling=schedule,
                   sampling_mode=opt.scheduled_sampling_mode, execution=execution)

    def begin_training_step(self, step):
        """Scheduled sampling's probability for training step `step` (1-based): its schedule's."""
        self.scheduled_sampling = self.sampling_schedule.at(step)

    @classmethod
    def upgrade_state_dict(cls, state):
        """A checkpoint's model state with the keys of older versions renamed to today's
        (a new dict)."""
        def rename(key):
            for old, new in cls.RENAMED_KEYS:
                if key.startswith(old):
                    return new + key[len(old):]
            return key
        return {rename(k): v for k, v in state.items()}

    @property
    def kernels(self):
        return self.execution.kernels

    def execution_notes(self):
        """The fused paths of the model's execution that do not apply to it, each with why
        (interface.py)."""
        if not self.execution.fused:
            return []
        notes = []
        if self.sampling_schedule.rate > 0 and not self._fused_argmax():
            notes.append("scheduled sampling from the full distribution: the fused argmax needs "
                         "-scheduled_sampling_mode argmax")
        if self.execution.compile == "mlp-scores":
            notes.append("compile mlp-scores: this model has no mlp attention, nothing is compiled")
        return notes

    @property
    def tgt_vocab_size(self):
        return self.decoder.tgt_vocab_size

    # ------------------------------------------------------------------ interface
    def encode(self, batch):
        return self.encoder(batch.src, batch.src_lengths)

    def init_state(self, batch, enc):
        state = self.decoder.init_state(enc, batch.src_ex, batch.n_oov)
        # W_out = tanh(E_tgt W_proj) once per batch, not at every decoding step (V x E x 3H FLOPs);
        # fused without autograd (beam search) packed for the steps' products, once per set of
        # parameters
        if not self.execution.decoding_only():
            return replace(state, out_weight=self.generator.out_weight())  # (V, 3H), (V,)
        weight, packed = self._decoding_weight()
        return replace(state, out_weight=weight, out_packed=packed)

    def train(self, mode=True):
        # no stale or idle copy of W_out while training; eval() keeps it (translate() calls eval())
        if mode:
            drop_cached(self)
        return super().train(mode)

    def _decoding_weight(self):
        """W_out, b_out (V, 3H), (V,) without gradient and their PackedLinear (in the model's
        decoding precision: low_precision.prepared_linear), kept while the generator's parameters
        are unchanged (packed_linear.cached_while_unchanged)."""
        def build():
            weight = self.generator.out_weight()  # (V, 3H), (V,)
            return weight, packed_out_weight(self.generator, weight,
                                             self.execution.decoding_precision)
        return cached_while_unchanged(self, list(self.generator.parameters()), build)

    def decode_step(self, inputs, state):
        """inputs (B,) extended ids -> log p (B, X), new state, attns: "std" (B, S) the encoder
        attention, "p_copy" (B,) the pointer's probability p(u=1), and (with intra-decoder
        attention) "intra" (B, t) the attention over the t previous decoder states ((B, 0) at the
        first step). All three are by-products of the step: nothing is computed for them."""
        o_t, attn, state, intra, fused = self._decoder_step(inputs, state)
        if fused and state.out_packed is not None:  # the fused decoding path
            logp, p_copy = pointer_generator_step_log_probs(
                self.generator, o_t, attn, state.per_row("src_ex"), state.per_row("first_pos"),
                state.n_oov, state.out_packed)  # (B, X), (B,)
        else:
            weight = (state.out_weight if state.out_weight is not None
                      else self.generator.out_weight())  # (V, 3H), (V,)
            weight = self.generator.pad_weight(weight, state.n_oov)  # (X, 3H), (X,)
            logp, p_copy = self.generator(o_t, attn, state.per_row("src_ex"),
                                          state.per_row("first_pos"), state.n_oov, weight=weight,
                                          return_p_copy=True)  # (B, X), (B,)
        return logp, state, _step_attns(attn, p_copy, intra)

    def decode_step_scores(self, inputs, state):
        """decode_step with log p as a step-scores object (interface.py): on the fused decoding path
        a mixture_scores.MixtureScores (the searches' top K without the (B, X) log-probabilities
        written), elsewhere decode_step's tensor as a DenseScores."""
        if not (self.execution.decoding_only() and state.out_packed is not None):
            logp, state, attns = self.decode_step(inputs, state)
            return DenseScores(logp.float()), state, attns
        o_t, attn, state, intra, _ = self._decoder_step(inputs, state)
        scores, p_copy = pointer_generator_step_scores(
            self.generator, o_t, attn, state.per_row("src_ex"), state.per_row("first_pos"),
            state.n_oov, state.out_packed)  # (B, X) scores, (B,)
        return scores, state, _step_attns(attn, p_copy, intra)

    def _decoder_step(self, inputs, state):
        """The decoder's step: (o_t (B, 3H), attn (B, S), new state, intra (B, t) or None, whether
        the fused decoding path runs)."""
        # fused without autograd, the encoder attention's scores in BLAS's fast layout
        # (step_source.DecodingSource)
        fused = self.execution.decoding_only()
        source = DecodingSource(state.enc_keys, state.memory, state.source_rows) if fused else None
        o_t, attn, state, intra = self.decoder.step(inputs, state, source=source, return_intra=True)
        return o_t, attn, state, intra, fused

    def forward(self, batch, enc=None):
        """Teacher forcing on batch.tgt (with scheduled sampling when training), from `enc` when
        given.

        Returns log p (B, T-1, X) predicting batch.tgt[:, 1:] and {"std": (B, T-1, S), "p_copy":
        (B, T-1) p(u=1) without gradient}, plus "sampled" (B, T-1), True where the step's input was
        the model's own prediction, when scheduled sampling is active.
        """
        out, attns, state, weight, _ = self._teacher_forcing(batch, enc)
        B, n_steps, S = attns["std"].shape
        src_ex, first_pos = (repeat_per_step(state.src_ex, n_steps),
                             repeat_per_step(state.first_pos, n_steps))
        logp, p_copy = self.generator(out, attns["std"].reshape(B * n_steps, S), src_ex, first_pos,
                                      state.n_oov,
                                      weight=self.generator.pad_weight(weight, state.n_oov),
                                      return_p_copy=True)  # (B*(T-1), X), (B*(T-1),)
        attns["p_copy"] = p_copy.view(B, n_steps)  # (B, T-1)
        return logp.view(B, n_steps, -1), attns  # (B, T-1, X)

    def gold_log_likelihood(self, batch, enc=None):
        """The fused training path: log p(gold) (B, T-1) (0 at padding), the argmax of the mixture
        (B, T-1) and the attns of `forward`, without any (B*(T-1), X) distribution (see
        onmt/fused/gold_mixture.py); same values and gradients as `forward` + gather. attns
        also holds "p_copy" (B, T-1), p(u=1) at every step (no gradient; padding steps included).
        With plain kernels, from `forward` (the full distribution)."""
        if not self.execution.fused:
            return gold_from_forward(self, batch, enc)
        out, attns, state, weight, loop_product = self._teacher_forcing(batch, enc)
        B, n_steps, S = attns["std"].shape
        # the logits o W_out^T + b_out on the weight scheduled sampling packed for its rows
        # (oneDNN's blocked layout: ~20 % faster than the column-blocked addmm, and already paid
        # for; under -amp in bfloat16, the same values as gold_log_softmax's own product); gradients
        # are gold_log_softmax's own products either way
        logits = logits_on(loop_product, out) if loop_product is not None else None  # (B*(T-1), V)
        gold, mask = gold_targets(batch, self.tgt_vocab_size + state.n_oov)  # (B, T-1)
        src_ex, first_pos = (repeat_per_step(state.src_ex, n_steps),
                             repeat_per_step(state.first_pos, n_steps))
        ll, pred, p_copy = pointer_generator_gold_log_prob(
            self.generator, out, attns["std"].reshape(B * n_steps, S), src_ex, first_pos,
            gold.reshape(-1), weight=weight, logits=logits, return_p_copy=True)  # (B*(T-1),) x3
        attns["p_copy"] = p_copy.view(B, n_steps)  # (B, T-1)
        return ll.view(B, n_steps).masked_fill(~mask, 0.0), pred.view(B, n_steps), attns

    def rollout(self, batch, enc, max_length, modes=("sample",)):
        """Free-running decoding from `enc` for the self-critical loss (interface.py `rollout`): the
        modes in lockstep, one generator product per step (onmt/reinforced/rollout.py)."""
        return lockstep_rollout(self, batch, enc, max_length, modes)

    def pass_out_weight(self, enc):
        """W_out, b_out (V, 3H), (V,) for a pass over `enc`: once per encoding (interface.per_pass),
        so the ML term and the rollouts of a mixed step that share an encoding share W_out and its
        graph."""
        return per_pass(enc, "out_weight", self.generator.out_weight)

    def pass_loop_product(self, enc):
        """W_out's prepared product without gradient (gold_mixture.training_loop_product) for a pass
        over `enc`, once per encoding like pass_out_weight (scheduled sampling's argmax, the
        rollouts' steps)."""
        return per_pass(enc, "loop_product",
                        lambda: training_loop_product(self.generator, self.pass_out_weight(enc)))

    def _teacher_forcing(self, batch, enc=None):
        """The decoding loop over batch.tgt (encoded here unless `enc` is given). Returns o
        (B*(T-1), 3H), attns {"std": (B, T-1, S) [, "sampled": (B, T-1)]}, the final state,
        (W_out, b_out) and the prepared product of W_out that scheduled sampling's fused argmax
        built (gold_mixture.training_loop_product; None without it)."""
        enc = enc if enc is not None else self.encode(batch)
        state = self.decoder.init_state(enc, batch.src_ex, batch.n_oov)  # projects after the loop
        tgt = batch.tgt  # (B, T)
        B, n_steps = tgt.size(0), tgt.size(1) - 1
        sampling = self.training and self.scheduled_sampling > 0
        # W_out once per pass over the encoding; the in-loop choices read it without gradient
        # (same values)
        weight = self.pass_out_weight(enc)  # (V, 3H), (V,)
        loop_weight = loop_product = None
        if sampling and self._fused_argmax():
            loop_weight = loop_product = self.pass_loop_product(enc)
        elif sampling:
            loop_weight = tuple(w.detach() for w in weight)
        outputs, attns, fed_back = [], [], []
        embed, source = None, None
        # the per-pass lookups and products (onmt/fused/step_embedding.py, step_source.py)
        if self.execution.fused:
            embed, source = self.decoder.step_embedding(), self.decoder.step_source(state)
        inputs = tgt[:, 0]  # (B,)
        for t in range(n_steps):
            o_t, attn, state = self.decoder.step(inputs, state, embed=embed, source=source)
            attns.append(attn)
            outputs.append(o_t)
            if t + 1 == n_steps:
                break
            inputs = tgt[:, t + 1]
            if sampling:
                inputs, drawn = self._sample_inputs(inputs, o_t, attn, state, loop_weight)
                fed_back.append(drawn)
        extra = {"std": torch.stack(attns, dim=1)}  # (B, T-1, S)
        if fed_back:  # (B, T-1): step t's input was the model's own prediction (step 0 never is)
            extra["sampled"] = torch.stack([torch.zeros_like(fed_back[0])] + fed_back, dim=1)
        # (B*(T-1), 3H)
        return torch.stack(outputs, dim=1).view(B * n_steps, -1), extra, state, weight, loop_product

    # ------------------------------------------------------------------ scheduled sampling
    def _fused_argmax(self):
        """Whether scheduled sampling takes the argmax without the (N, X) distribution
        (fused kernels)."""
        return self.sampling_mode == "argmax" and self.execution.fused

    def _choose(self, logp):
        """The model's own prediction from log p (N, X): argmax or a sample. Returns (N,) ids."""
        if self.sampling_mode == "sample":
            return sample_rows(logp.exp())
        return logp.argmax(dim=1)

    def _sample_inputs(self, reference, o_t, attn, state, weight):
        """Replace each example's next input, with probability p, by its own prediction.

        Only the drawn rows get a distribution; ids >= V_tgt are mapped to <unk> by the decoder when
        read. Returns the (B,) inputs and the (B,) mask of drawn rows.
        """
        # (B,)
        drawn = torch.rand(reference.shape, device=reference.device) < self.scheduled_sampling
        with torch.no_grad():
            rows = drawn.nonzero().squeeze(1)  # (N,)
            if rows.numel() == 0:
                return reference, drawn
            o_rows, attn_rows = o_t[rows], attn[rows]  # (N, 3H), (N, S)
            src_ex, first_pos = state.src_ex[rows], state.first_pos[rows]  # (N, S)
            if self._fused_argmax():  # exact, without the (N, X) distribution
                chosen = pointer_generator_predict(self.generator, o_rows, attn_rows, src_ex,
                                                   first_pos, weight=weight)
            else:
                chosen = self._choose(self.generator(
                    o_rows, attn_rows, src_ex, first_pos, state.n_oov,
                    weight=self.generator.pad_weight(weight, state.n_oov)))
            inputs = reference.clone()
            inputs[rows] = chosen
            return inputs, drawn


def _step_attns(attn, p_copy, intra):
    """decode_step's attns: "std" (B, S), "p_copy" (B,) and, with intra-decoder attention, "intra"
    (B, t)."""
    attns = {"std": attn, "p_copy": p_copy}
    if intra is not None:
        attns["intra"] = intra
    return attns
