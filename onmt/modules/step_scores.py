"""The log-probabilities of one decoding step, as the searches query them.

A search asks four things of a step's log p (R, X) (its "step scores"): set some of them to -inf
(its token rules: onmt/translate/decoding.py `apply_rules`), keep one token only (the last step),
each example's top K continuations over its W rows (beam search) and each row's best token
(greedy search):

    scores.X                        the columns of log p
    scores.ban_(tokens, where)      log p(r, tokens[r, j]) = -inf where where[r, j] (all when None);
                                    (R, n)
    scores.allow_only_(token)       every log p -inf but column `token`'s
    scores.beam_topk(running, k)    running (B, W) -> (values (B, k), ids (B, k) in the flattened
                                    W*X)
    scores.best()                   (values (R,), ids (R,)): each row's largest log p
    scores.full()                   log p (R, X) as a tensor

`DenseScores` holds log p as the (R, X) tensor `decode_step` returns (every model); a model may give
a step's scores without writing that tensor (interface.py `decode_step_scores`: the reinforced
model's onmt/fused/mixture_scores.py). Every method works in place: the caller owns the fresh step
output.
"""

from onmt.modules.beam_topk import NEG_INF, beam_topk


def exclusion(where, shape, like):
    """-inf where `where` (or everywhere when None), +inf elsewhere, in like's dtype and device
    (made there: no host-to-device copy): the values of a scatter_reduce_ "amin" that bans where
    asked."""
    if where is None:
        return like.new_full(shape, NEG_INF)
    return like.new_full(shape, float("inf")).masked_fill_(where, NEG_INF)


class DenseScores:
    """log p (R, X) as a tensor (a float32 `decode_step` output, which this changes in place)."""

    def __init__(self, logp):
        self.logp = logp
        self.X = logp.size(1)

    def ban_(self, tokens, where=None):
        """log p(row r, tokens[r, j]) = -inf where where[r, j] (everywhere when None); tokens, where
        (R, n)."""
        self.logp.scatter_reduce_(1, tokens, exclusion(where, tokens.shape, self.logp),
                                  reduce="amin")

    def allow_only_(self, token):
        """Every log p -inf except column `token`'s."""
        kept = self.logp[:, token].clone()  # (R,)
        self.logp.fill_(NEG_INF)
        self.logp[:, token] = kept

    def beam_topk(self, scores, k):
        """scores (B, W) running scores of W rows per example -> (values (B, k), ids (B, k) in
        W*X)."""
        return beam_topk(self.logp, scores, k)

    def best(self):
        """(values (R,), ids (R,)): each row's largest log p and its first column."""
        return self.logp.max(dim=1)

    def full(self):
        return self.logp
