"""The length rules onmt_tune_decoding searches: a grid whose axes widen while the choice sits at an
edge, and the rule that decodes to a requested mean length.

    axis_status(values, chosen, low, high)       where a chosen value sits on its axis
    widened(values, side, low, high)             the axis one step further out (None at its bound)
    nearest_length(mean_length, lo, hi, target)  the integer rule of mean output length nearest

Plain Python, no tensors: the decoding is a callable the tuner passes in.
"""

# where a chosen value sits on its axis
INTERIOR = "interior"
TOP, BOTTOM = "top edge", "bottom edge"   # the grid could go further: the best may lie beyond
CAP = "at its bound"                      # the top of the axis is the stated bound (-max_alpha)
LOWEST = "lowest possible"                # the rule's smallest value (alpha 0, minimum length 0)
FIXED = "one value"                       # the axis was not tuned
FLAGGED = (TOP, BOTTOM, CAP)


def axis_status(values, chosen, low, high):
    """Where `chosen` sits among `values` on an axis whose values lie in [low, high]."""
    values = sorted(set(values))
    if len(values) == 1:
        return FIXED
    if chosen == values[-1]:
        return CAP if chosen >= high else TOP
    if chosen == values[0]:
        return LOWEST if chosen <= low else BOTTOM
    return INTERIOR


def widened(values, side, low, high):
    """The value one step beyond the `side` (TOP or BOTTOM) of `values`, the step being the spacing
    of the last two values on that side, clamped to [low, high]; None when that side is at its
    bound."""
    values = sorted(set(values))
    if len(values) < 2:
        return None
    if side == TOP:
        if values[-1] >= high:
            return None
        return min(values[-1] + (values[-1] - values[-2]), high)
    if values[0] <= low:
        return None
    return max(values[0] - (values[1] - values[0]), low)


def nearest_length(mean_length, lo, hi, target):
    """The integer x in [lo, hi] whose `mean_length(x)` (non-decreasing in x, as a minimum or
    maximum length is) comes nearest `target`, by bisection: (x, mean length at x, {x: mean length
    probed}). Ties go to the smaller x. Each probe is one decoding; about log2(hi - lo) + 2."""
    probes = {}

    def f(x):
        if x not in probes:
            probes[x] = mean_length(x)
        return probes[x]

    a, b = lo, hi
    if f(a) < target <= f(b):
        while b - a > 1:                 # invariant: f(a) < target <= f(b)
            mid = (a + b) // 2
            if f(mid) < target:
                a = mid
            else:
                b = mid
    best = min(probes, key=lambda x: (abs(probes[x] - target), x))
    return best, probes[best], dict(sorted(probes.items()))
