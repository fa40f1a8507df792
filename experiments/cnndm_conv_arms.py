"""The pre-registered systems of experiments/cnndm_conv.py: CNN/DM in a regime where ML converges on a CPU.

Written, and committed, before any of its arms trained (issue 52). Nothing here is changed after a result
is seen; a variant chosen after a test result would be added under a new name and marked as such.

Regime (every model): the shared 39,160 training pairs, articles cut to 200 tokens and summaries to 60
(tuning, development and test references scored in full), one shared vocabulary, its first 20,000 words
for the source and 5,000 for the target, embeddings 64, hidden 128 (a 2 x 64 bidirectional encoder), one
layer, Adam 1e-3, batch 50, gradient norm 2, the reinforced family's recipe otherwise.

Stages:
  1. ML to a plateau, one per scheduled-sampling setting: ml0 (none) and ml25 (the paper's 0.25). Early
     stopping on the tuning pairs' perplexity, patience 3, validation every 400 steps (about half an
     epoch), at most 150 CPU-minutes.
  2. The gate, per setting: from the ML phase's best checkpoint, 20 CPU-minutes more of ML at lr 1e-4
     (fresh Adam): g<ss>_1. Both tuned (the same grid); if tuning R-Lsum moved by >= 0.3, ML goes on:
     g<ss>_2 continues g<ss>_1 the same way, and so on up to GATE_MAX gates. The converged checkpoint of
     a setting is the start of the last gate that passed (the ML phase's best when the first passes).
  3. The start: of the two converged checkpoints, the one of higher tuned tuning R-Lsum (both scored as
     views: the scheduled-sampling comparison). The start is scored as an arm of its own (`start`).
  4. From the start, per seed s in (1, 2), each arm with the start's scheduled-sampling setting:
       a<s>  the mixed objective (gamma 0.9984, rollouts of at most 60 tokens, lr 1e-4, fresh Adam) for
             RL_UPDATES updates;
       b<s>  ML at lr 1e-4 (fresh Adam), the CPU seconds a<s> spent;
       m<s>  ML at lr 1e-3 with the start's Adam state, the CPU seconds a<s> spent;
     and c1, RL alone (gamma 1), RL_UPDATES updates. The strongest ML control of a seed is the one of
     higher tuned tuning R-Lsum.
Every view chooses among CANDIDATES checkpoints: a later arm's at 1/3, 2/3 and all of its budget; an ML
setting's (ml0, ml25) the ML phase's best, the ML phase's last and the converged checkpoint (when these
coincide, the latest checkpoints before them make up the number); the start's view is the start alone.
"""
from typing import NamedTuple, Optional

SIZES = ["-word_vec_size", "64", "-rnn_size", "128", "-max_grad_norm", "2", "-report_every", "50",
         "-batch_size", "50", "-optim", "adam", "-learning_rate", "0.001"]
TRUNC = ("200", "60")
VOCAB = ("20000", "5000")
ML_SECONDS = 9000.0          # 150 CPU-minutes
ML_VALID_STEPS = 400
ML_PATIENCE = 3
GATE_SECONDS = 1200.0        # 20 CPU-minutes
GATE_DELTA = 0.3             # tuning R-Lsum points
GATE_MAX = 3
RL_UPDATES = 2000
RL_MAX_GEN = "60"
SAVE_STEPS = 100             # later arms: a checkpoint every N steps
CANDIDATES = 3
SEEDS = (1, 2)
SS = {"0": "0", "25": "0.25"}


class Arm(NamedTuple):
    """A trained system. `kind`: ml (from scratch, early stopping), gate (20 CPU-minutes at 1e-4 from the
    previous stage), mixed / rl (RL_UPDATES updates from the start), control (the CPU seconds of the
    mixed arm of its seed); `options`: train.py options beyond SIZES; `fresh`: a fresh Adam state."""
    kind: str
    options: tuple
    description: str
    seed: int = 1
    fresh: bool = True
    paper: Optional[tuple] = None   # (R-1, R-2, R-L) of the row of Paulus et al.'s Table 1 (full test set)


def ml_arm(ss):
    return Arm("ml", ("-reinforced", "-scheduled_sampling", SS[ss]),
               f"reinforced model, ML, scheduled sampling {SS[ss]}", fresh=False,
               paper=(38.30, 14.81, 35.49) if ss == "25" else None)


def gate_arm(ss, k):
    return Arm("gate", ("-reinforced", "-scheduled_sampling", SS[ss], "-learning_rate", "0.0001"),
               f"gate {k} of ML with scheduled sampling {SS[ss]}: 20 CPU-minutes more at lr 1e-4")


def later_arms():
    """The arms from the start; their scheduled-sampling option is the start's (added when it is known)."""
    out = {}
    for s in SEEDS:
        out[f"a{s}"] = Arm("mixed", ("-rl_gamma", "0.9984", "-learning_rate", "0.0001", "-max_gen_length", RL_MAX_GEN),
                           "ML + RL (gamma 0.9984, lr 1e-4, fresh Adam)", s, True, (39.87, 15.82, 36.90))
        out[f"b{s}"] = Arm("control", ("-learning_rate", "0.0001"), "ML at lr 1e-4, fresh Adam, a's CPU", s, True)
        out[f"m{s}"] = Arm("control", ("-learning_rate", "0.001",), "ML at lr 1e-3, the start's Adam, a's CPU",
                           s, False)
    out["c1"] = Arm("rl", ("-rl_gamma", "1.0", "-learning_rate", "0.0001", "-max_gen_length", RL_MAX_GEN),
                    "RL alone (gamma 1, lr 1e-4, fresh Adam)", 1, True, (41.16, 15.75, 39.08))
    return out


ARMS = {"ml0": ml_arm("0"), "ml25": ml_arm("25"),
        **{f"g{ss}_{k}": gate_arm(ss, k) for ss in SS for k in range(1, GATE_MAX + 1)},
        **later_arms()}
CONTROLS = ("b{s}", "m{s}")

# Paulus et al.'s decoding: beam 5, no repeated trigram, at most 100 tokens; the length rule (wu alpha x
# minimum length) tuned on a grid that widens an axis whose choice sits at its edge (onmt_tune_decoding
# -widen), up to alpha 3 and a minimum length of 90
SEARCH = ["-beam_size", "5", "-max_length", "100", "-block_ngram_repeat", "3"]
ALPHAS = ["0", "0.5", "1", "1.5"]
MIN_LENGTHS = ["0", "15", "30", "45"]
WIDEN = ["-widen", "-max_alpha", "3", "-max_min_length", "90"]
METRIC = "rougeLsum"
