"""Word embeddings (PAD row kept at zero) and loading of GloVe-format text vectors."""
import gzip
import logging

import torch
import torch.nn as nn

from onmt.constants import PAD
from onmt.errors import UserError

logger = logging.getLogger(__name__)


class Embeddings(nn.Module):
    """A lookup table with padding_idx=PAD followed by optional dropout. dropout_cls: the dropout
    module's class, nn.Dropout or one with the same distribution that a model built with fused
    kernels gives (onmt/fused/dropout.py)."""

    def __init__(self, vocab_size, embedding_size, dropout=0.0, dropout_cls=nn.Dropout):
        super().__init__()
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.lut = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD)
        self.dropout = dropout_cls(dropout)

    @property
    def weight(self):
        return self.lut.weight

    def forward(self, ids):
        """ids: (...) integer ids < vocab_size -> (..., E)."""
        return self.dropout(self.lut(ids))

    def zero_padding_row(self):
        """Re-zero the PAD row (call after a custom initialization)."""
        with torch.no_grad():
            self.lut.weight[PAD].zero_()

    def load_pretrained(self, path, vocab):
        """Copy the vectors of `path` into the rows of `vocab`'s words; returns how many were
        found."""
        found = load_glove_into(self.lut.weight, path, vocab)
        self.zero_padding_row()
        return found


FORMATS = ("GloVe text ('word v1 ... vE' per line) or word2vec text (its 'count dim' header "
           "line first), plain or .gz")


def _open_text(path):
    """The vectors file as text; one UserError naming the expected formats for a file that cannot
    be read or is binary (a NUL byte in its first 64 KiB: a PyTorch .pt tensor such as OpenNMT-py's
    tools/embeddings_to_torch.py writes, word2vec's binary format)."""
    gz = str(path).endswith(".gz")
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            head = f.read(1 << 16)
    except (OSError, EOFError) as e:
        raise UserError(f"cannot read the word vectors {path}: {getattr(e, 'strerror', None) or e}"
                        f" (expected {FORMATS})") from None
    if b"\0" in head:
        kind = ("a PyTorch file (OpenNMT-py's tools/embeddings_to_torch.py writes one; give its "
                "text input instead)" if head[:4] == b"PK\x03\x04" or head[:1] == b"\x80"
                else "a binary file (word2vec's binary format?)")
        raise UserError(f"{path} is {kind}, not word vectors as text: expected {FORMATS}")
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def load_glove_into(weight, path, vocab):
    """Fill rows of `weight` (V, E) from a GloVe-format text file `word v1 ... vE`.

    Only the first `weight.size(0)` words of `vocab` are looked up (a decoder may use a prefix of a
    shared vocabulary). A first line `count dim` (word2vec header) is skipped. Returns the number of
    vocabulary words that received a vector and logs it. Raises UserError naming the file and line
    when a vector does not have E values, and one naming the expected formats for a file that is
    binary or unreadable or gives no vocabulary word a vector.
    """
    n_rows, dim = weight.shape
    found = 0
    seen = set()
    with torch.no_grad(), _open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            parts = line.rstrip("\n").rstrip().split(" ")
            if len(parts) < 2:
                continue
            if lineno == 1 and len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                continue  # word2vec-style header
            word, values = parts[0], parts[1:]
            if len(values) != dim:
                raise UserError(f"{path}, line {lineno}: vector of dimension {len(values)} "
                                f"for '{word}', but the embeddings have dimension {dim}")
            idx = vocab.stoi.get(word)
            if idx is None or idx >= n_rows or idx in seen:
                continue
            try:
                vec = torch.tensor([float(v) for v in values], dtype=weight.dtype)
            except ValueError:
                raise UserError(f"{path}, line {lineno}: non-numeric value in the vector of "
                                f"'{word}'")
            weight[idx].copy_(vec)
            seen.add(idx)
            found += 1
    if found == 0:
        raise UserError(f"{path}: no vector for any of the {n_rows} vocabulary words (expected "
                        f"{FORMATS}, whose words are the vocabulary's: lowercased data needs "
                        "lowercased vectors)")
    logger.info("%s: found vectors for %d of %d vocabulary words", path, found, n_rows)
    return found
