"""Teacher-forced re-scoring through decode_step: what a search's scores must equal."""
import torch

from onmt.constants import EOS


def rescore(model, batch, b, seqs):
    """Teacher-forced sum of log p over each of `seqs` (+ </s>) for example b, a loop over steps."""
    with torch.no_grad():
        state = model.init_state(batch, model.encode(batch)).reorder(torch.full((len(seqs),), b))
        full = [[2] + s + [EOS] for s in seqs]
        T = max(len(s) for s in full)
        total = torch.zeros(len(seqs))
        for t in range(T - 1):
            inp = torch.tensor([s[t] if t < len(s) - 1 else EOS for s in full])
            logp, state, _ = model.decode_step(inp, state)
            for i, s in enumerate(full):
                if t + 1 < len(s):
                    total[i] += logp[i, s[t + 1]]
    return total.tolist()
