"""Vocabularies: the shared frequency-ordered word list, plain-text storage."""
from onmt.constants import N_SPECIALS, SPECIALS, UNK
from onmt.utils.files import write_lines_atomic


class Vocab:
    """An id <-> word mapping whose first entries are the special tokens."""

    def __init__(self, itos):
        if list(itos[:N_SPECIALS]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, "
                             f"got {list(itos[:N_SPECIALS])}")
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("a vocabulary must not hold a word twice")

    def __len__(self):
        return len(self.itos)

    def __eq__(self, other):
        return isinstance(other, Vocab) and self.itos == other.itos

    def lookup(self, word):
        return self.stoi.get(word, UNK)

    def prefix(self, size):
        """The first `size` entries: the target vocabulary of a shared word list."""
        return Vocab(self.itos[:size])


class Vocabs:
    """Source and target vocabularies; with `shared`, tgt is a prefix of src (same ids)."""

    def __init__(self, src, tgt, shared):
        if shared and src.itos[: len(tgt)] != tgt.itos:
            raise ValueError("a shared vocabulary needs the target vocabulary to be a prefix of "
                             "the source one")
        self.src, self.tgt, self.shared = src, tgt, shared

    def to_dict(self):
        """Plain lists, safe for torch.load(weights_only=True)."""
        return {"src": list(self.src.itos), "tgt": list(self.tgt.itos), "shared": bool(self.shared)}

    @classmethod
    def from_dict(cls, d):
        return cls(Vocab(d["src"]), Vocab(d["tgt"]), d["shared"])

    def __eq__(self, other):
        return (isinstance(other, Vocabs) and self.src == other.src and self.tgt == other.tgt
                and self.shared == other.shared)


def write_vocab_file(path, words, counts):
    """`word<TAB>count` per line, written atomically."""
    write_lines_atomic(path, (f"{w}\t{c}" for w, c in zip(words, counts)), "vocabulary")


def read_vocab_file(path, size=None):
    """The words of a `word<TAB>count` file, the first `size` of them if given."""
    words = []
    with open(path, encoding="utf-8-sig") as f:   # a byte-order mark is not part of the first word
        for line in f:
            words.append(line.rstrip("\n").split("\t")[0])
            if size is not None and len(words) >= size:
                break
    return Vocab(words)
