"""What each term of a loss adds to an update: the norm of its share of the gradient.

A loss given as parts ({"ml": (1 - gamma) L_ml, "rl": gamma L_rl}, onmt/losses/rl.py `parts`) is
backpropagated one part after the other; the gradient each part adds is the difference of the
accumulated gradients before and after its backward pass, summed over the step's batches (and over
the ranks: one all_reduce of each part's flat vector). Their norms, before clipping, say what gamma
weighs in practice: the paper's 0.9984 can still leave an update that is almost all RL when the RL
term's gradient is much larger than the ML term's.

    norms = PartNorms(model.parameters())
    for batch in step: parts = ...; norms.backward(parts, normalizer, backward)
    norms.finish(world) -> {"ml": |g_ml|, "rl": |g_rl|}
    stats.extra.update(as_sums(norms))   # Statistics sums; `report` and `scalars` name them

The figures are this module's: the trainer adds them to the step's Statistics.extra as
"update_norm_<part>" and "update_norm_steps", and `report` / `scalars` turn a window's sums into the
report line's `update norm ML 0.12, RL 0.0063 (RL/ML 0.05)` and TensorBoard's norm_<part>.

Cost: one flat copy of the gradients per part and batch (the parameters' size), nothing when the
loss has one part.
"""
import torch

PREFIX = "update_norm_"
STEPS = PREFIX + "steps"   # the steps whose norms a window summed


def flat_gradients(params):
    """(P,) float32 concatenation of every gradient (zeros where a parameter has none)."""
    return torch.cat([
        (p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).float()
        for p in params])


class PartNorms:
    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.sums = {}   # part name -> (P,) gradient this part added over the step's batches

    def backward(self, parts, normalizer, backward):
        """Backpropagate each part / normalizer with `backward(tensor, retain_graph)`, recording
        what each one adds to the gradients; the last part frees the graph."""
        names = list(parts)
        before = flat_gradients(self.params)
        for i, name in enumerate(names):
            backward(parts[name] / normalizer, i < len(names) - 1)
            after = flat_gradients(self.params)
            added = after - before  # (P,)
            self.sums[name] = self.sums[name] + added if name in self.sums else added
            before = after

    def finish(self, world=None, scale=1.0):
        """{part: norm of its gradient} for the step (summed over ranks when `world` is
        distributed); `scale`: the loss scale the gradients carry (fp16 -amp), divided out."""
        if world is not None and world.distributed:
            # torch.distributed only in a run of several processes
            import torch.distributed as dist
            for flat in self.sums.values():
                dist.all_reduce(flat)
        return {name: float(flat.norm()) / scale for name, flat in self.sums.items()}


def as_sums(norms):
    """{part: norm} of one step -> the sums Statistics.extra carries."""
    return {**{PREFIX + name: value for name, value in norms.items()}, STEPS: 1}


def _means(sums):
    """{part: mean norm per step} of a window's sums ({} without norms)."""
    n = sums.get(STEPS, 0)
    if not n:
        return {}
    return {k[len(PREFIX):]: v / n for k, v in sums.items() if k.startswith(PREFIX) and k != STEPS}


def report(sums):
    """The report line's figures: ['update norm ML 0.12, RL 0.0063 (RL/ML 0.05)'] (the ratio of the
    second part to the first with two parts), [] without norms."""
    means = _means(sums)
    if not means:
        return []
    line = "update norm " + ", ".join(f"{name.upper()} {g:.3g}" for name, g in means.items())
    if len(means) == 2:
        (a, g_a), (b, g_b) = means.items()
        line += f" ({b.upper()}/{a.upper()} {g_b / g_a:.3g})" if g_a > 0 else ""
    return [line]


def scalars(sums):
    """TensorBoard's norm_<part>: the mean norm of each part's gradient per step
    ({} without norms)."""
    return {f"norm_{name}": g for name, g in _means(sums).items()}
