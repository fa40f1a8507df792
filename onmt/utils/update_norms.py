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

Cost: one flat copy of the gradients per part and batch (the parameters' size), nothing when the
loss has one part.
"""
import torch


def flat_gradients(params):
    """(P,) float32 concatenation of every gradient (zeros where a parameter has none)."""
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1).float()
                      for p in params])


class PartNorms:
    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.sums = {}   # part name -> (P,) gradient this part added over the step's batches

    def backward(self, parts, normalizer, backward):
        """Backpropagate each part / normalizer with `backward(tensor, retain_graph)`, recording what
        each one adds to the gradients; the last part frees the graph."""
        names = list(parts)
        before = flat_gradients(self.params)
        for i, name in enumerate(names):
            backward(parts[name] / normalizer, i < len(names) - 1)
            after = flat_gradients(self.params)
            added = after - before  # (P,)
            self.sums[name] = self.sums[name] + added if name in self.sums else added
            before = after

    def finish(self, world=None, scale=1.0):
        """{part: norm of its gradient} for the step (summed over ranks when `world` is distributed);
        `scale`: the loss scale the gradients carry (fp16 -amp), divided out."""
        if world is not None and world.distributed:
            import torch.distributed as dist
            for flat in self.sums.values():
                dist.all_reduce(flat)
        return {name: float(flat.norm()) / scale for name, flat in self.sums.items()}
