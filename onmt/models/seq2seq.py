"""The baseline encoder-decoder models (`rnn` and `copy` in the registry), implementing
onmt/interface.py.

`execution` (an Execution, onmt/execution.py: kernels, decoding precision, compile) is fixed
when the model is built: the model keeps it and builds its encoder, decoder, embeddings and
generator with it. With fused kernels a decoding step's vocabulary product is packed once in the
decoding precision (`_decoding_linear`), the copy generator decodes with row blocks in place
(onmt/fused/step_mixture.py) and the copy model's training path is the gold-only mixture
(onmt/fused/gold_mixture.py); with plain kernels every path is the formula.
"""
import torch.nn as nn

from onmt.constants import UNK
from onmt.errors import UserError
from onmt.execution import as_execution
from onmt.fused import step_mixture
from onmt.fused.dropout import Dropout
from onmt.fused.gold_mixture import copy_generator_gold_log_prob
from onmt.fused.low_precision import prepared_linear
from onmt.fused.packed_linear import cached_while_unchanged, drop_cached
from onmt.interface import gold_targets
from onmt.models.components import build_decoder, build_encoder
from onmt.models.generic import ModelDefaults, gold_from_forward, rollout_from_steps
from onmt.modules.copy_generator import CopyGenerator, Generator
from onmt.modules.embeddings import Embeddings
from onmt.modules.step_scores import DenseScores


class NMTModel(ModelDefaults, nn.Module):
    """RNN encoder, RNN decoder (attention / input feeding / fixed context) and a softmax generator.

    Args:
        encoder: the ENCODER of the component tables (onmt/models/components.py): RNNEncoder.
        decoder: the DECODER of the tables: RNNDecoder.
        generator: Generator (plain) or CopyGenerator (pointer-generator, extended vocabulary).
        tgt_vocab_size: V_tgt.
        execution: an Execution (module docstring) or a kernels name; the encoder and decoder are
            built with the same.
    """

    copy = False  # True when log-probabilities cover the extended vocabulary
    ENCODER = DECODER = "rnn"   # from_opt's components (onmt/models/components.py)

    def __init__(self, encoder, decoder, generator, tgt_vocab_size, execution=None):
        super().__init__()
        self.execution = execution = as_execution(execution)
        if (encoder.execution, decoder.execution) != (execution, execution):
            raise ValueError(f"a model of {execution} needs an encoder and a decoder of the same, "
                             f"got {encoder.execution} and {decoder.execution}")
        self.encoder, self.decoder, self.generator = encoder, decoder, generator
        self.tgt_vocab_size = tgt_vocab_size

    @property
    def kernels(self):
        return self.execution.kernels

    @classmethod
    def from_opt(cls, opt, vocabs, execution=None):
        """Build from the model options (onmt/opts/model.py, updated: -layers already resolved into
        -enc_layers and -dec_layers) and the Vocabs, with `execution` (module docstring)."""
        execution = as_execution(execution)
        fused = execution.fused
        dropout_cls = Dropout if fused else nn.Dropout
        src_emb = Embeddings(len(vocabs.src), opt.word_vec_size, dropout=opt.dropout,
                             dropout_cls=dropout_cls)
        if opt.share_embeddings:
            if not vocabs.shared:
                raise UserError("-share_embeddings needs data preprocessed with -share_vocab")
            tgt_emb = src_emb  # target ids < V_tgt index the same rows (tgt is a prefix of src)
        else:
            tgt_emb = Embeddings(len(vocabs.tgt), opt.word_vec_size, dropout=opt.dropout,
                                 dropout_cls=dropout_cls)
        encoder = build_encoder(cls.ENCODER, opt, src_emb, execution)
        decoder = build_decoder(cls.DECODER, opt, tgt_emb, execution)
        tgt_vocab_size = len(vocabs.tgt)
        tied = tgt_emb if opt.share_decoder_embeddings else None
        if cls.copy:
            mixture = (dict(generation=step_mixture.generation_log_probs,
                            scatter=step_mixture.scatter_mixture)
                       if fused else {})
            generator = CopyGenerator(opt.rnn_size, tgt_vocab_size, opt.word_vec_size,
                                      tied_embeddings=tied, **mixture)
        else:
            generator = Generator(opt.rnn_size, tgt_vocab_size, tied_embeddings=tied)
        return cls(encoder, decoder, generator, tgt_vocab_size, execution=execution)

    # ------------------------------------------------------------------ interface
    def encode(self, batch):
        return self.encoder(batch.src, batch.src_lengths)

    def init_state(self, batch, enc):
        if self.copy:
            return self.decoder.init_state(enc, src_ex=batch.src_ex, n_oov=batch.n_oov)
        return self.decoder.init_state(enc)

    def embed_target(self, ids):
        """ids (B, [T]) in the extended vocabulary -> (B, [T,] E); ids >= V_tgt become <unk>."""
        return self.decoder.embeddings(ids.masked_fill(ids >= self.tgt_vocab_size, UNK))

    def _attns(self, dec, p_copy=None):
        attns = {}
        if dec.attn is not None:
            attns["std"] = dec.attn
        if dec.coverage is not None:
            attns["coverage"] = dec.coverage
        if p_copy is not None:
            attns["p_copy"] = p_copy
        return attns

    def _generate(self, dec, state, linear=None):
        """log-probs (B, [T,] X) and the attns; copy models add "p_copy" (B, [T]) = 1 - p_gen.
        linear: the vocabulary projection to use instead of the generator's own (same values)."""
        if self.copy:
            logp, p_copy = self.generator(dec, state.per_row("src_ex"), state.n_oov,
                                          state.per_row("first_pos"), return_p_copy=True,
                                          linear=linear)
            return logp, self._attns(dec, p_copy)
        return (self.generator(dec, state.per_row("src_ex"), state.n_oov,
                               state.per_row("first_pos"), linear=linear),
                self._attns(dec))

    def decode_step(self, inputs, state):
        """inputs (B,) -> (log-probs (B, X), new state, attns of (B, S)
        (and "p_copy" (B,) with copy)).
        With fused kernels and without autograd the vocabulary product uses the generator's weight
        packed once (PackedLinear)."""
        dec, state = self.decoder.step(self.embed_target(inputs), state)
        linear = self._decoding_linear() if self.execution.decoding_only() else None
        logp, attns = self._generate(dec, state, linear)
        return logp, state, attns

    def decode_step_scores(self, inputs, state):
        """decode_step with log p as step scores (interface.py): the copy model's fused decoding
        gives a mixture_scores.MixtureScores (the searches' top K without the (B, X)
        log-probabilities written), every other case decode_step's tensor as a DenseScores."""
        if not (self.copy and self.execution.decoding_only()):
            logp, state, attns = self.decode_step(inputs, state)
            return DenseScores(logp.float()), state, attns
        dec, state = self.decoder.step(self.embed_target(inputs), state)
        scores, p_copy = step_mixture.copy_generator_step_scores(
            self.generator, dec, state.per_row("src_ex"), state.per_row("first_pos"), state.n_oov,
            self._decoding_linear())
        return scores, state, self._attns(dec, p_copy)

    def train(self, mode=True):
        # no stale or idle packed weight while training; eval() keeps it (translate() calls eval())
        if mode:
            drop_cached(self)
        return super().train(mode)

    def _decoding_linear(self):
        """The generator's vocabulary projection as a PackedLinear (no gradient; in the model's
        decoding precision: low_precision.prepared_linear), kept while its weight and bias are
        unchanged (packed_linear.cached_while_unchanged); a tied weight is the embedding's."""
        proj = self.generator.linear
        weight, bias = proj.weight, proj.bias  # (V, H), (V,)
        return cached_while_unchanged(
            self, [weight, bias],
            lambda: prepared_linear(weight, bias, self.execution.decoding_precision))

    def execution_notes(self):
        """The fused paths of the model's execution that do not apply to it, each with why
        (interface.py)."""
        return self.decoder.execution_notes()

    def forward(self, batch, enc=None):
        """Teacher forcing on batch.tgt (from `enc` when given, interface.py) -> (log-probs
        (B, T-1, X), attns of (B, T-1, S) (and "p_copy" (B, T-1) with copy))."""
        state = self.init_state(batch, enc if enc is not None else self.encode(batch))
        dec, state = self.decoder(self.embed_target(batch.tgt[:, :-1]), state)
        return self._generate(dec, state)

    def gold_log_likelihood(self, batch, enc=None):
        """From `forward`: log p(gold) (B, T-1) with 0 at padding, argmax ids (B, T-1), attns."""
        return gold_from_forward(self, batch, enc)

    def rollout(self, batch, enc, max_length, modes=("sample",)):
        """Free-running decoding for the self-critical loss, through decode_step (interface.py)."""
        return rollout_from_steps(self, batch, enc, max_length, modes)


class CopyNMTModel(NMTModel):
    """See et al.'s pointer-generator: NMTModel with a CopyGenerator over the extended
    vocabulary."""

    copy = True

    def gold_log_likelihood(self, batch, enc=None):
        """The fused training path (onmt/fused/gold_mixture.py): log p(gold) (B, T-1) with 0 at
        padding, the argmax (B, T-1) and the attns, without the (B, T-1, X) distribution; with plain
        kernels, from `forward` (the full distribution)."""
        if not self.execution.fused:
            return gold_from_forward(self, batch, enc)
        state = self.init_state(batch, enc if enc is not None else self.encode(batch))
        dec, state = self.decoder(self.embed_target(batch.tgt[:, :-1]), state)
        gold, mask = gold_targets(batch, self.tgt_vocab_size + state.n_oov)  # (B, T-1)
        # captured (-cuda_graphs): every row, padding too, rather than a nonzero of the real ones
        rows = None if self.execution.capture != "off" else mask
        ll, pred, p_copy = copy_generator_gold_log_prob(self.generator, dec, state.src_ex,
                                                        state.first_pos, gold, return_p_copy=True,
                                                        mask=rows)  # (B, T-1) x3
        return ll.masked_fill(~mask, 0.0), pred, self._attns(dec, p_copy)
