"""The pre-registered systems of experiments/cnndm_conv.py: CNN/DM in a regime where ML converges on a CPU.

Written, and committed, before any of its arms trained (issue 52). Nothing here is changed after a result
is seen; a variant chosen after a test result would be added under a new name and marked as such.

Regime (every model): the shared 39,160 training pairs, articles cut to 200 tokens and summaries to 60
(tuning, development and test references scored in full), one shared vocabulary, its first 20,000 words
for the source and 5,000 for the target, embeddings 64, hidden 128 (a 2 x 64 bidirectional encoder), one
layer, Adam 1e-3, batch 50, gradient norm 2, the reinforced family's recipe otherwise.

Stages (the numbers: CONFIG below):
  1. ML to a plateau, one per scheduled-sampling setting: ml0 (none) and ml25 (the paper's 0.25). Early
     stopping on the tuning pairs' perplexity, patience 3, validation every 400 steps (about half an
     epoch), at most 150 CPU-minutes.
  2. The gate, per setting: from the ML phase's best checkpoint, 20 CPU-minutes more of ML at lr 1e-4
     (fresh Adam): g<ss>_1. Both tuned (the same grid); if g<ss>_1 gained >= 0.3 tuning R-Lsum, ML goes
     on: g<ss>_2 continues g<ss>_1's last checkpoint the same way, and so on up to 3 gates (a loss, or a
     gain below 0.3, passes: ML can no longer improve it by more). The converged checkpoint of a setting
     is the start of the gate that passed (the ML phase's best when the first passes); when no gate
     passes, the last gate's end, reported as not converged.
  3. The start: of the two converged checkpoints, the one of higher tuned tuning R-Lsum (both scored as
     views: the scheduled-sampling comparison). The start is scored as an arm of its own (`start`).
  4. From the start, per seed s in (1, 2), each arm with the start's scheduled-sampling setting:
       a<s>  the mixed objective (gamma 0.9984, rollouts of at most 60 tokens, lr 1e-4, fresh Adam) for
             2,000 updates;
       b<s>  ML at lr 1e-4 (fresh Adam), the CPU seconds a<s> spent;
       m<s>  ML at lr 1e-3 with the start's Adam state, the CPU seconds a<s> spent;
     and c1, RL alone (gamma 1), 2,000 updates. The strongest ML control of a seed is the one of
     higher tuned tuning R-Lsum.
Every view chooses among 3 checkpoints: a later arm's at 1/3, 2/3 and all of its budget; an ML setting's
(ml0, ml25) the ML phase's best, the ML phase's last and the last gate's end (when the ML phase's best is
its last, the checkpoint before it makes up the number); the start's view is the start alone. Every
checkpoint is tuned on its own (onmt_tune_decoding -widen: wu alpha 0, 0.5, 1, 1.5 x minimum length 0, 15,
30, 45, an edge axis widened up to alpha 3 and minimum length 90) and a view takes its candidate of highest
tuned tuning R-Lsum; beside it, the length-matched figure (the chosen checkpoint and alpha decoded to the
tuning references' mean length, -match_output). Test is decoded once per view, at the tuned and at the
matched rule.
"""
from typing import NamedTuple, Optional

SIZES = ["-word_vec_size", "64", "-rnn_size", "128", "-max_grad_norm", "2", "-report_every", "50",
         "-batch_size", "50", "-optim", "adam", "-learning_rate", "0.001"]
SEEDS = (1, 2)
SS = {"0": "0", "25": "0.25"}
GATE_DELTA = 0.3             # tuning R-Lsum points: a gate passes when 20 more minutes gain less
CANDIDATES = 3
METRIC = "rougeLsum"


class Config(NamedTuple):
    """The numbers of the regime (CONFIG); a smoke run (tiny_config) shrinks them, never for figures."""
    sizes: tuple = tuple(SIZES)
    trunc: tuple = ("200", "60")
    vocab: tuple = ("20000", "5000")
    split_span: int = 1500       # validation's first N pairs make up tuning and development
    split_every: int = 3         # every third of them tunes
    ml_seconds: float = 9000.0   # 150 CPU-minutes
    ml_valid_steps: int = 400    # about half an epoch
    ml_patience: int = 3
    gate_seconds: float = 1200.0  # 20 CPU-minutes
    gate_max: int = 3
    rl_updates: int = 2000
    rl_max_gen: str = "60"
    save_steps: int = 100        # later arms and gates: a checkpoint every N steps
    valid_steps: int = 400       # later arms and gates: validation perplexity every N steps
    tune_batch: str = "64"
    noblock_pairs: int = 500     # test pairs decoded again without trigram blocking
    # Paulus et al.'s decoding: beam 5, no repeated trigram, at most 100 tokens; the length rule (wu alpha x
    # minimum length) tuned on a grid that widens an axis whose choice sits at its edge (onmt_tune_decoding
    # -widen), up to alpha 3 and a minimum length of 90
    search: tuple = ("-beam_size", "5", "-max_length", "100", "-block_ngram_repeat", "3")
    alphas: tuple = ("0", "0.5", "1", "1.5")
    min_lengths: tuple = ("0", "15", "30", "45")
    widen: tuple = ("-widen", "-max_alpha", "3", "-max_min_length", "90")


CONFIG = Config()


def tiny_config():
    return Config(sizes=("-word_vec_size", "8", "-rnn_size", "16", "-batch_size", "10", "-report_every", "5"),
                  trunc=("30", "16"), vocab=("40", "25"), split_span=9, split_every=3, ml_seconds=3.0,
                  ml_valid_steps=5, ml_patience=2, gate_seconds=1.0, gate_max=2, rl_updates=6, rl_max_gen="10",
                  save_steps=2, valid_steps=4, tune_batch="8", noblock_pairs=2,
                  search=("-beam_size", "2", "-max_length", "8", "-block_ngram_repeat", "3"), alphas=("0", "1"),
                  min_lengths=("0", "2"), widen=("-widen", "-max_alpha", "2", "-max_min_length", "4"))


class Arm(NamedTuple):
    """A trained system. `kind`: ml (from scratch, early stopping), gate (gate_seconds at 1e-4 from the
    previous stage), mixed / rl (rl_updates updates from the start), control (the CPU seconds of the mixed
    arm of its seed); `options`: train.py options (ML phases: beyond SIZES; from a checkpoint, the
    checkpoint's model and objective carry and these change it); `fresh`: a fresh Adam state."""
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
    return Arm("gate", ("-learning_rate", "0.0001"),
               f"gate {k} of ML with scheduled sampling {SS[ss]}: 20 CPU-minutes more at lr 1e-4, fresh Adam")


def later_arms():
    """The arms from the start (its scheduled-sampling setting carries with its checkpoint)."""
    out = {}
    for s in SEEDS:
        out[f"a{s}"] = Arm("mixed", ("-rl_gamma", "0.9984", "-learning_rate", "0.0001"),
                           "ML + RL (gamma 0.9984, lr 1e-4, fresh Adam)", s, True, (39.87, 15.82, 36.90))
        out[f"b{s}"] = Arm("control", ("-learning_rate", "0.0001"), "ML at lr 1e-4, fresh Adam, a's CPU", s, True)
        out[f"m{s}"] = Arm("control", ("-learning_rate", "0.001",), "ML at lr 1e-3, the start's Adam, a's CPU",
                           s, False)
    out["c1"] = Arm("rl", ("-rl_gamma", "1.0", "-learning_rate", "0.0001"),
                    "RL alone (gamma 1, lr 1e-4, fresh Adam)", 1, True, (41.16, 15.75, 39.08))
    return out


ARMS = {"ml0": ml_arm("0"), "ml25": ml_arm("25"),
        **{f"g{ss}_{k}": gate_arm(ss, k) for ss in SS for k in range(1, CONFIG.gate_max + 1)},
        **later_arms()}
CONTROLS = ("b{s}", "m{s}")
# the views, in the order they are scored: the two ML settings (scheduled sampling), the start, the arms
VIEWS = ("ml0", "ml25", "start", *(f"{k}{s}" for s in SEEDS for k in "abm"), "c1")
