"""Longest common subsequences for ROUGE-L and ROUGE-Lsum, bit-parallel on Python integers.

Notation: a reference ("model" in ROUGE-1.5.5's words) sentence r_1..r_m indexes the rows of the
LCS table c, a predicted ("peer") sentence q_1..q_n its columns. Column j is held as one integer V_j
whose bit i-1 is 0 exactly when c[i][j] = c[i-1][j] + 1 (Hyyro's bit-vector LCS: V_0 is all ones,
V_j = (V + U) | (V - U) with U = V & match-mask(q_j)), so the LCS length is the number of 0 bits.

Several reference sentences are packed in one integer, each followed by a guard bit that stops the
carry of the addition, so one pass over a predicted sentence serves all of them.

ROUGE-Lsum (ROUGE-1.5.5's ROUGE-L over sentence-split files) needs the positions of the LCS, not
only its length, and exactly the ones ROUGE-1.5.5 picks: from (m, n) it goes diagonally on a match,
else up when c[i-1][j] >= c[i][j-1], else left. In bit terms: "up" exactly when bit i-1 of V_j is 1.
`union_hits` follows that path with two jumps instead of single steps:
- in column j it goes up to the nearest row with a match or a 0 bit (one mask and bit_length);
- from a row with a 0 bit and no match, it goes left; along that row c stays at c[i][j] while
  c[i-1][.] stays below it, so it keeps going left until the previous occurrence of r_i in q
  (one mask of q's positions and bit_length), where it takes the match.
So a path costs a few integer operations per matched word, not per cell.
"""
from itertools import compress


def lcs_length(ref, pred):
    """LCS length of two token-id lists."""
    if not ref or not pred:
        return 0
    masks = {}
    for i, t in enumerate(ref):
        masks[t] = masks.get(t, 0) | (1 << i)
    return _lcs_from_masks(masks, len(ref), pred)


def _lcs_from_masks(masks, m, pred):
    """LCS length of an m-row reference given as {token: row bit mask} and the token list `pred`.
    Rows that match nothing (the guard bits of a PackedReference) leave the length unchanged."""
    full = (1 << m) - 1
    v = full
    for match in map(masks.get, pred):
        if match:
            u = v & match
            v = ((v + u) | (v - u)) & full
    return m - v.bit_count()


class PackedReference:
    """A reference's sentences packed for `union_hits`: bit offsets, guard bits, match masks, and
    `flat`, the token at each packed position (None at guard bits)."""

    def __init__(self, sents):
        self.sents = sents
        self.offsets = []
        flat = []
        for s in sents:
            self.offsets.append(len(flat))
            flat.extend(s)
            flat.append(None)                            # guard bit
        masks = {}
        for pos, t in enumerate(flat):
            masks[t] = masks.get(t, 0) | (1 << pos)
        self.guards = masks.pop(None, 0)
        self.masks, self.flat = masks, flat
        self.full = ((1 << len(flat)) - 1) ^ self.guards

    def lcs_with(self, pred):
        """LCS length of all the sentences, concatenated, with the token list `pred` (ROUGE-L)."""
        return _lcs_from_masks(self.masks, len(self.flat), pred) if pred else 0

    def tokens_at(self, mask):
        """The tokens at the set bits of `mask`, in position order."""
        bits = bin(mask)[:1:-1].encode().translate(_BIT_BYTES)  # b"\x00\x01..." lowest bit first
        return compress(self.flat, bits)


_BIT_BYTES = bytes.maketrans(b"01", b"\x00\x01")


def union_hits(ref: PackedReference, pred_sents):
    """Per reference sentence, the set of its positions on ROUGE-1.5.5's LCS path with some
    predicted sentence (the union over predicted sentences), as a bit mask in packed positions."""
    hits = 0
    full, get, flat = ref.full, ref.masks.get, ref.flat
    bounds = [(o, o + len(r)) for r, o in zip(ref.sents, ref.offsets) if r]
    for q in pred_sents:
        if not q:
            continue
        # forward pass: z[j-1] = rows where the path stops going up in column j
        # (a 0 bit or a match);
        # positions[t] = columns holding t (bit j-1 <-> column j)
        z, positions = [], {}
        v = full
        bit = 1
        for t, m in zip(q, map(get, q)):
            if m:
                u = v & m
                v = ((v + u) | (v - u)) & full
                z.append((full ^ v) | m)
                positions[t] = positions.get(t, 0) | bit
            else:                                           # no match in this column: V unchanged
                z.append(full ^ v)
            bit <<= 1
        n = len(q)
        for o, g in bounds:                                 # g: 1 + the top row (global, 1-based)
            j = n
            while j:
                b = (z[j - 1] & ((1 << g) - 1)).bit_length()    # up to the nearest stop in column j
                if b <= o:
                    break                                   # up to row 0: no more matches
                t = flat[b - 1]
                # a 0 bit without a match: left, to t's column
                if t != q[j - 1]:
                    j = (positions[t] & ((1 << (j - 1)) - 1)).bit_length()
                hits |= 1 << (b - 1)
                g = b - 1
                j -= 1
                if g <= o:
                    break
    return hits
