"""The block train.py -sample_every N logs: one validation example decoded greedily.

    Sample at step 200 (validation example 17):
      SOURCE (60 of 412 words): the first words of the source ...
      REFERENCE: the reference summary
      PREDICTION: the [Obama] administration said [Tuesday] ...
      mean p(copy): 0.31 over 12 steps; 2 copied words in [brackets]

Copied words are marked as in the plots (records.copied_marks: an OOV copy, or p(copy) >= 0.5).
The prediction is plain greedy search (no n-gram blocking) through the model interface, so it
serves every model family; `describe_example` runs under torch.no_grad with the model in eval mode
and restores the training mode. Greedy search draws no random numbers and eval mode turns dropout
off, so a sample leaves the RNG streams, and thus training, exactly as they were.
"""
from dataclasses import replace

import numpy as np
import torch

from onmt.constants import BOS, EOS, PAD, UNK_WORD
from onmt.inputters.vocab import Vocabs
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings
from onmt.translate.records import make_record

SHOWN_SOURCE = 60   # source words shown


def select_example(batch, index=0):
    """The Batch of example `index` of `batch` alone (padding trimmed, its own OOV list)."""
    src_len = max(int(batch.src_lengths[index]), 1)
    tgt = tgt_ex = None
    if batch.tgt is not None:
        tgt_len = max(int((batch.tgt[index] != PAD).sum()), 1)
        tgt = batch.tgt[index:index + 1, :tgt_len]                           # (1, T)
        tgt_ex = batch.tgt_ex[index:index + 1, :tgt_len] if batch.tgt_ex is not None else None
    oovs = [list(batch.oovs[index])]
    return replace(batch, src=batch.src[index:index + 1, :src_len],
                   src_lengths=batch.src_lengths[index:index + 1],
                   src_ex=batch.src_ex[index:index + 1, :src_len], oovs=oovs, n_oov=len(oovs[0]),
                   indices=batch.indices[index:index + 1], tgt=tgt, tgt_ex=tgt_ex)


def _words(ids, vocab, oovs=()):
    V = len(vocab)
    return [vocab.itos[i] if i < V else (oovs[i - V] if i - V < len(oovs) else UNK_WORD)
            for i in ids]


def predict_example(model, batch, vocabs, max_length=100):
    """Greedy prediction of the one-example `batch` with its inspection record; under no_grad in
    eval mode, the model's training mode restored. Returns (record, reference words or None)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            (hyp,) = beam_search(model, batch, SearchSettings(beam_size=1, max_length=max_length),
                                 keep_inspection=True)[0]
    finally:
        model.train(was_training)
    n_src = int(batch.src_lengths[0])
    src = _words(batch.src[0, :n_src].tolist(), vocabs.src)
    V = len(vocabs.tgt)
    for i, e in enumerate(batch.src_ex[0, :n_src].tolist()):   # copyable OOVs: their own words
        if e >= V and e - V < len(batch.oovs[0]):
            src[i] = batch.oovs[0][e - V]
    pred = _words(hyp.tokens, vocabs.tgt, batch.oovs[0])
    record = make_record(int(batch.indices[0]), src, pred, hyp, len(vocabs.tgt), model.copy)
    reference = None
    if batch.tgt is not None:
        ref_ids = batch.tgt_ex[0] if batch.tgt_ex is not None else batch.tgt[0]
        ref_ids = [i for i in ref_ids.tolist() if i not in (BOS, EOS, PAD)]
        reference = _words(ref_ids, vocabs.tgt, batch.oovs[0])
    return record, reference


def format_block(record, reference=None, step=None, shown=SHOWN_SOURCE):
    """The logged text of a record (module docstring)."""
    src = record["src"]
    head = f"Sample at step {step}" if step is not None else "Sample"
    lines = [f"{head} (validation example {record['line'] + 1}):"]
    cut = f" ({shown} of {len(src)} words)" if len(src) > shown else ""
    lines.append(f"  SOURCE{cut}: {' '.join(src[:shown])}{' ...' if cut else ''}")
    if reference is not None:
        lines.append(f"  REFERENCE: {' '.join(reference)}")
    marked = [f"[{w}]" if c else w for w, c in zip(record["pred"], record["copied"])]
    lines.append(f"  PREDICTION: {' '.join(marked)}")
    n = len(record["pred"])
    if record["p_copy"] is None:
        lines.append("  (no pointer: nothing is copied)")
    elif n:
        lines.append(f"  mean p(copy): {float(np.mean(record['p_copy'][:n])):.2f} over {n} steps; "
                     f"{int(np.sum(record['copied']))} copied words in [brackets]")
    else:
        lines.append("  (empty prediction)")
    return "\n".join(lines)


def describe_example(model, batch, vocabs, index=0, step=None, max_length=100):
    """The -sample_every block of example `index` of `batch` (a Batch on the model's device)."""
    record, reference = predict_example(model, select_example(batch, index), vocabs, max_length)
    return format_block(record, reference, step)


class TrainingSample:
    """The example -sample_every logs during training: the first row of the first validation batch
    (always the same one), with the vocabularies to write it."""

    def __init__(self, batch, vocabs):
        self.batch, self.vocabs = batch, vocabs

    @classmethod
    def first_of(cls, valid_data, vocab_dict):
        """The sample of `valid_data` (a ShardedDataset), or None when there is no validation
        example."""
        first = next(iter(valid_data.iter_epoch(0)), None) if valid_data is not None else None
        return (None if first is None
                else cls(select_example(first, 0), Vocabs.from_dict(vocab_dict)))

    def describe(self, model, device, step, max_length):
        return describe_example(model, self.batch.to(device), self.vocabs, step=step,
                                max_length=max_length)
