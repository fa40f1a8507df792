"""Paulus, Xiong & Socher (2017)'s deep reinforced model behind the common model interface.

Encoder: shared embedding -> (bi)LSTM (onmt.models.rnn_encoder). Decoder: LSTM with intra-temporal
and intra-decoder attention (decoder.py, intra_attention.py: eqs. 2-8). Output: pointer-generator
with the tied projection W_out = tanh(E_tgt W_proj) (pointer_generator.py: eqs. 9-13).

This class is the formula: teacher forcing through `decoder.step` and the generator over V_tgt once,
after the decoding loop, on all B*(T-1) rows (the ML loss gathers the gold from the full
distribution); inside the loop only the rows whose next input is scheduled-sampled get a
distribution (without gradient: the choice is discrete); decoding with W_out computed once per
batch; the rollouts as rollout.py says, through the generator's `predict`, `gold_log_prob` and
`loop_product`. FusedReinforcedModel (onmt/reinforced/fused.py), which the registry builds for
fused kernels, overrides whole methods and the hooks `_loop_weight`, `pass_step_args` and
`_decoder_step` with onmt/fused's kernels (the table in its __init__.py).

`execution` (an Execution, onmt/execution.py) is what the builder chose; this class keeps it and
never reads it.
"""
from dataclasses import replace

import torch
import torch.nn as nn

from onmt.execution import PLAIN
from onmt.interface import per_pass
from onmt.models.components import build_decoder, build_encoder
from onmt.models.generic import ModelDefaults, gold_from_forward
from onmt.modules.copy_mixture import repeat_per_step
from onmt.modules.embeddings import Embeddings
from onmt.modules.partial_embedding import PartialEmbedding
from onmt.modules.sampling import SamplingSchedule, sample_rows
from onmt.reinforced.pointer_generator import PointerGenerator
from onmt.reinforced.rollout import rollout as lockstep_rollout


class ReinforcedModel(ModelDefaults, nn.Module):
    copy = True
    ENCODER, DECODER = "rnn", "reinforced"   # from_opt's components (onmt/models/components.py)
    dropout_cls = nn.Dropout                 # the shared embedding's dropout
    generator_cls = PointerGenerator
    # state_dict key prefixes renamed since checkpoints were first written: old -> new
    RENAMED_KEYS = (("decoder.embedding.", "decoder.embeddings."),)

    def __init__(self, encoder, decoder, generator, scheduled_sampling=0.0, sampling_mode="argmax",
                 execution=PLAIN):
        """scheduled_sampling: a probability, or a SamplingSchedule (onmt/modules/sampling.py) that
        `begin_training_step` follows; `self.scheduled_sampling` is the probability of the step;
        execution: what the builder chose (kept, module docstring)."""
        super().__init__()
        if sampling_mode not in ("argmax", "sample"):
            raise ValueError(f"sampling_mode must be argmax or sample, got {sampling_mode}")
        if not isinstance(scheduled_sampling, SamplingSchedule):
            scheduled_sampling = SamplingSchedule(scheduled_sampling)
        self.sampling_schedule = scheduled_sampling
        self.execution = execution
        self.encoder, self.decoder, self.generator = encoder, decoder, generator
        # until the trainer says which step it is
        self.scheduled_sampling = scheduled_sampling.at(1)
        self.sampling_mode = sampling_mode

    @classmethod
    def from_opt(cls, opt, vocabs, execution=PLAIN):
        """The model of `opt` with each module's own initialization, its encoder and decoder from
        the component tables for `execution`; -param_init is applied by onmt.model_builder
        (build_model / init_parameters), as for every family."""
        # shared vocabulary and equal layer counts: checked by opts.validate_model_opts and the
        # registry's check_data before any model is built
        embeddings = Embeddings(len(vocabs.src), opt.word_vec_size, dropout=opt.dropout,
                                dropout_cls=cls.dropout_cls)
        # the paper's encoder is an LSTM without a bridge whatever the options (they are refused)
        encoder = build_encoder(cls.ENCODER, opt, embeddings, execution, rnn_type="LSTM",
                                bridge=False)
        partial = PartialEmbedding(embeddings.lut, len(vocabs.tgt))
        decoder = build_decoder(cls.DECODER, opt, partial, execution)
        generator = cls.generator_cls(decoder.output_size, len(vocabs.tgt), embedding=partial,
                                      tied=not opt.no_tied_output)
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
    def tgt_vocab_size(self):
        return self.decoder.tgt_vocab_size

    # ------------------------------------------------------------------ interface
    def encode(self, batch):
        return self.encoder(batch.src, batch.src_lengths)

    def init_state(self, batch, enc):
        state = self.decoder.init_state(enc, batch.src_ex, batch.n_oov)
        # W_out = tanh(E_tgt W_proj) once per batch, not at every decoding step (V x E x 3H FLOPs)
        return replace(state, out_weight=self.generator.out_weight())  # (V, 3H), (V,)

    def decode_step(self, inputs, state):
        """inputs (B,) extended ids -> log p (B, X), new state, attns: "std" (B, S) the encoder
        attention, "p_copy" (B,) the pointer's probability p(u=1), and (with intra-decoder
        attention) "intra" (B, t) the attention over the t previous decoder states ((B, 0) at the
        first step). All three are by-products of the step: nothing is computed for them."""
        o_t, attn, state, intra = self._decoder_step(inputs, state)
        weight = (state.out_weight if state.out_weight is not None
                  else self.generator.out_weight())  # (V, 3H), (V,)
        weight = self.generator.pad_weight(weight, state.n_oov)  # (X, 3H), (X,)
        logp, p_copy = self.generator(o_t, attn, state.per_row("src_ex"),
                                      state.per_row("first_pos"), state.n_oov, weight=weight,
                                      return_p_copy=True)  # (B, X), (B,)
        return logp, state, step_attns(attn, p_copy, intra)

    def _decoder_step(self, inputs, state):
        """The decoder's step: (o_t (B, 3H), attn (B, S), new state, intra (B, t) or None)."""
        return self.decoder.step(inputs, state, return_intra=True)

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
        """log p(gold) (B, T-1) (0 at padding), the argmax (B, T-1) and the attns of `forward`,
        from the full distribution (generic.gold_from_forward)."""
        return gold_from_forward(self, batch, enc)

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
        """W_out's product without gradient (the generator's `loop_product`) for a pass over `enc`,
        once per encoding like pass_out_weight (the rollouts' steps; a fused model's scheduled
        sampling argmax)."""
        return per_pass(enc, "loop_product",
                        lambda: self.generator.loop_product(self.pass_out_weight(enc)))

    def pass_step_args(self, state):
        """What the decoder's steps of one pass from `state` are given besides their inputs (the
        fused per-pass lookups and products; none here)."""
        return {}

    def _loop_weight(self, enc, weight):
        """The W_out scheduled sampling's in-loop choices read, without gradient (same values)."""
        return tuple(w.detach() for w in weight)

    def _teacher_forcing(self, batch, enc=None):
        """The decoding loop over batch.tgt (encoded here unless `enc` is given). Returns o
        (B*(T-1), 3H), attns {"std": (B, T-1, S) [, "sampled": (B, T-1)]}, the final state,
        (W_out, b_out) and the W_out that scheduled sampling read (`_loop_weight`; None without
        scheduled sampling)."""
        enc = enc if enc is not None else self.encode(batch)
        state = self.decoder.init_state(enc, batch.src_ex, batch.n_oov)  # projects after the loop
        tgt = batch.tgt  # (B, T)
        B, n_steps = tgt.size(0), tgt.size(1) - 1
        sampling = self.training and self.scheduled_sampling > 0
        # W_out once per pass over the encoding; the in-loop choices read it without gradient
        # (same values)
        weight = self.pass_out_weight(enc)  # (V, 3H), (V,)
        loop_weight = self._loop_weight(enc, weight) if sampling else None
        outputs, attns, fed_back = [], [], []
        step_args = self.pass_step_args(state)
        inputs = tgt[:, 0]  # (B,)
        for t in range(n_steps):
            o_t, attn, state = self.decoder.step(inputs, state, **step_args)
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
        return torch.stack(outputs, dim=1).view(B * n_steps, -1), extra, state, weight, loop_weight

    # ------------------------------------------------------------------ scheduled sampling
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
            if self.sampling_mode == "sample":  # a sample of the full distribution
                chosen = sample_rows(self.generator(
                    o_rows, attn_rows, src_ex, first_pos, state.n_oov,
                    weight=self.generator.pad_weight(weight, state.n_oov)).exp())
            else:  # the argmax
                chosen = self.generator.predict(o_rows, attn_rows, src_ex, first_pos, state.n_oov,
                                                weight=weight)
            inputs = reference.clone()
            inputs[rows] = chosen
            return inputs, drawn


def step_attns(attn, p_copy, intra):
    """decode_step's attns: "std" (B, S), "p_copy" (B,) and, with intra-decoder attention, "intra"
    (B, t)."""
    attns = {"std": attn, "p_copy": p_copy}
    if intra is not None:
        attns["intra"] = intra
    return attns
