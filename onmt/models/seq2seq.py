"""The baseline encoder-decoder models (`rnn` and `copy` in the registry), implementing
onmt/interface.py.

These classes are the formulas. Their fused subclasses (onmt/models/fused.py: FusedNMTModel,
FusedCopyNMTModel), which the registry builds for kernels "fused", pack a decoding step's vocabulary
product once in the decoding precision (`_decoding_projection`), give the copy generator the
row-blocked in-place mixture (`COPY_MIXTURE`) and train the copy model through the gold-only
mixture. `execution` (an Execution, onmt/execution.py) is what the builder chose: kept, never read
here.
"""
import torch.nn as nn

from onmt.constants import UNK
from onmt.errors import UserError
from onmt.execution import PLAIN
from onmt.models.components import build_decoder, build_encoder
from onmt.models.generic import ModelDefaults, gold_from_forward, rollout_from_steps
from onmt.modules.copy_generator import CopyGenerator, Generator
from onmt.modules.embeddings import Embeddings


class NMTModel(ModelDefaults, nn.Module):
    """RNN encoder, RNN decoder (attention / input feeding / fixed context) and a softmax generator.

    Args:
        encoder: the ENCODER of the component tables (onmt/models/components.py): RNNEncoder.
        decoder: the DECODER of the tables: RNNDecoder.
        generator: Generator (plain) or CopyGenerator (pointer-generator, extended vocabulary).
        tgt_vocab_size: V_tgt.
        execution: what the builder chose (module docstring).
    """

    copy = False  # True when log-probabilities cover the extended vocabulary
    ENCODER = DECODER = "rnn"   # from_opt's components (onmt/models/components.py)
    dropout_cls = nn.Dropout    # the embeddings' dropout
    COPY_MIXTURE = {}           # the CopyGenerator's mixture functions (its own formulas)

    def __init__(self, encoder, decoder, generator, tgt_vocab_size, execution=PLAIN):
        super().__init__()
        self.execution = execution
        self.encoder, self.decoder, self.generator = encoder, decoder, generator
        self.tgt_vocab_size = tgt_vocab_size

    @classmethod
    def from_opt(cls, opt, vocabs, execution=PLAIN):
        """Build from the model options (onmt/opts/model.py, updated: -layers already resolved into
        -enc_layers and -dec_layers) and the Vocabs, the encoder and decoder from the component
        tables for `execution`."""
        src_emb = Embeddings(len(vocabs.src), opt.word_vec_size, dropout=opt.dropout,
                             dropout_cls=cls.dropout_cls)
        if opt.share_embeddings:
            if not vocabs.shared:
                raise UserError("-share_embeddings needs data preprocessed with -share_vocab")
            tgt_emb = src_emb  # target ids < V_tgt index the same rows (tgt is a prefix of src)
        else:
            tgt_emb = Embeddings(len(vocabs.tgt), opt.word_vec_size, dropout=opt.dropout,
                                 dropout_cls=cls.dropout_cls)
        encoder = build_encoder(cls.ENCODER, opt, src_emb, execution)
        decoder = build_decoder(cls.DECODER, opt, tgt_emb, execution)
        tgt_vocab_size = len(vocabs.tgt)
        tied = tgt_emb if opt.share_decoder_embeddings else None
        if cls.copy:
            generator = CopyGenerator(opt.rnn_size, tgt_vocab_size, opt.word_vec_size,
                                      tied_embeddings=tied, **cls.COPY_MIXTURE)
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
        (and "p_copy" (B,) with copy))."""
        dec, state = self.decoder.step(self.embed_target(inputs), state)
        logp, attns = self._generate(dec, state, self._decoding_projection())
        return logp, state, attns

    def _decoding_projection(self):
        """The vocabulary projection a decoding step uses instead of the generator's own (the same
        values), or None: the generator's."""
        return None

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
