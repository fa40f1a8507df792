"""The systems of experiments/cnndm.py: what each arm trains, where it starts, how each view decodes.

Read by experiments/cnndm.py (the jobs) and experiments/cnndm_report.py (the table). Every model has the
same sizes: embeddings 128, hidden 256 (a bidirectional encoder of 2 x 128, a decoder of 256), one layer,
Adam 1e-3 (the reinforced family's recipe; See et al. used Adagrad 0.15, here Adam so that the families
differ by their architecture only), batch 50 articles, gradient norm 2, on the same preprocessed data
(articles cut to 400 tokens, summaries to 100, one shared 20k source / 10k target vocabulary).
"""
from typing import NamedTuple, Optional

SIZES = ["-word_vec_size", "128", "-rnn_size", "256", "-max_grad_norm", "2", "-report_every", "25"]
# See et al.'s pointer-generator: bidirectional LSTM encoder, Bahdanau (mlp) attention that is also the copy
# distribution, one embedding matrix for both sides, one layer and no dropout as they trained it (the
# general family's defaults, OpenNMT's 2 layers and dropout 0.3, are not theirs)
POINTER = ["-copy_attn", "-brnn", "-global_attention", "mlp", "-share_embeddings", "-layers", "1",
           "-dropout", "0", "-optim", "adam", "-learning_rate", "0.001", "-batch_size", "50"]
# Paulus et al.'s model with its family's recipe (onmt/opts/families.py): intra-attention scores scaled
# by 1/sqrt(H), Adam 1e-3, batch 50; and the paper's scheduled sampling 0.25, given here since the recipe
# dropped it (r_ss0's result): every arm keeps the command it was trained with
REINFORCED = ["-reinforced", "-scheduled_sampling", "0.25"]


class Arm(NamedTuple):
    """A trained system. `start`: None (from scratch, an ML phase with early stopping) or the arm whose
    checkpoint it continues ("r_ml" means the checkpoint the r_ml view's tuning chose; "pg_ml" its
    best validation perplexity, as See et al. continued their ML model); `budget`: which CPU budget
    (ml, cov, arm); `options`: train.py options beyond SIZES; `fresh`: a fresh Adam state."""
    family: str                 # "pointer" or "reinforced": the decoding rules of its views
    options: tuple
    description: str
    paper: Optional[tuple] = None   # (R-1, R-2, R-L) of the row of Paulus et al.'s Table 1 it stands for
    start: Optional[str] = None
    budget: str = "ml"
    fresh: bool = False
    seed: int = 1


def _mixed(seed, gamma, lr, fresh, description, paper=None):
    more = (["-rl_gamma", str(gamma)] if gamma is not None else []) + ["-learning_rate", lr]
    return Arm("reinforced", tuple(more), description, paper, "r_ml", "arm", fresh, seed)


SEEDS = (1, 2)
ARMS = {
    "pg_ml": Arm("pointer", tuple(POINTER), "See et al.'s pointer-generator (ML, no coverage)",
                 (36.44, 15.66, 33.42)),
    "pg_cov": Arm("pointer", ("-coverage_attn", "-lambda_coverage", "1"),
                  "See et al.'s pointer-generator + coverage (lambda 1, a short phase from pg_ml)",
                  (39.53, 17.28, 36.38), start="pg_ml", budget="cov"),
    "r_ml": Arm("reinforced", tuple(REINFORCED), "reinforced model, ML, with intra-attention", (38.30, 14.81, 35.49)),
    "r_noid": Arm("reinforced", (*REINFORCED, "-no_intra_decoder_attn"),
                  "reinforced model, ML, without intra-decoder attention"),
    "r_nota": Arm("reinforced", (*REINFORCED, "-no_temporal_attn"),
                  "reinforced model, ML, without intra-temporal attention"),
    "r_none": Arm("reinforced", (*REINFORCED, "-no_intra_decoder_attn", "-no_temporal_attn"),
                  "reinforced model, ML, without intra-attention", (37.86, 14.69, 34.99)),
    **{f"a{s}": _mixed(s, 0.9984, "0.0001", True, "ML + RL (gamma 0.9984, lr 1e-4, fresh Adam)",
                       (39.87, 15.82, 36.90)) for s in SEEDS},
    **{f"b{s}": _mixed(s, None, "0.0001", True, "ML continued at lr 1e-4, fresh Adam, equal CPU") for s in SEEDS},
    **{f"m{s}": _mixed(s, None, "0.001", False, "ML phase continued at its own lr 1e-3 and Adam state, equal CPU")
       for s in SEEDS},
    "c1": _mixed(1, 1.0, "0.0001", True, "RL alone (gamma 1, lr 1e-4, fresh Adam)", (41.16, 15.75, 39.08)),
    # scheduled sampling earning its place (r_ml has the paper's 0.25 from the first step)
    "r_ss0": Arm("reinforced", (*REINFORCED, "-scheduled_sampling", "0"),
                 "reinforced model, ML, without scheduled sampling"),
    "r_ssramp": Arm("reinforced", (*REINFORCED, "-scheduled_sampling_ramp", "1000"),
                    "reinforced model, ML, scheduled sampling rising from 0 to 0.25 over 1,000 steps"),
}
CONTROLS = ("b{s}", "m{s}")         # the ML controls of equal compute of a seed
LEAD3_PAPER = (40.34, 17.70, 36.57)   # lead-3 as See et al. report it (Paulus et al. quote it)

# decoding, as each system's authors decode: See et al. beam 4, no blocking, at most 120 tokens; Paulus et
# al. beam 5, no repeated trigram, at most 100 tokens. The length rule (wu alpha x minimum length) is tuned.
SEARCH = {"pointer": ["-beam_size", "4", "-max_length", "120", "-block_ngram_repeat", "0"],
          "reinforced": ["-beam_size", "5", "-max_length", "100", "-block_ngram_repeat", "3"]}
# the grid of a view tuned from now on (issue 52): finer alphas, minimum lengths up to the references', an
# axis whose choice sits at its edge widened (onmt_tune_decoding -widen) up to alpha 3 and minimum length 90;
# the committed views were tuned on alpha 0, 1, 2 x minimum length 0, 35 (the report flags their edges)
ALPHAS = ["0", "0.5", "1", "1.5"]
MIN_LENGTHS = ["0", "15", "30", "45"]
WIDEN = ["-widen", "-max_alpha", "3", "-max_min_length", "90"]
METRIC = "rougeLsum"        # the papers' ROUGE-L: ROUGE-1.5.5 on sentence-split summaries


def views(seeds=SEEDS):
    """Every view (what is tuned and scored), in the order its jobs are wanted: the reinforced ML model
    first (the later arms continue it), the first seed's arms before the ablations, later seeds last."""
    seeds = [str(s) for s in seeds]
    arms = lambda s: [f"{k}{s}" for k in "abm"] + (["c1"] if s == "1" else [])  # noqa: E731
    first = arms(seeds[0]) if seeds else []
    return ["lead3", "r_ml", "pg_ml", "pg_cov", *first, "r_none", "r_noid", "r_nota",
            *(v for s in seeds[1:] for v in arms(s) if v in ARMS), "r_ss0", "r_ssramp"]


def baseline(view, control):
    """The view a view is tested against: ablations and See et al.'s models against the reinforced ML
    model, the mixed objective and RL alone against `control(seed)` (the strongest ML control chosen on
    tuning), None for the reinforced ML model and the controls themselves."""
    if view in ("r_ml",) or view[0] in "bm":
        return None
    if view[0] in "ac":
        return control(view[1:])
    return "r_ml"


# each part of the model earning its place: (what, the system with it, the system without it)
PARTS = [("coverage (See et al.)", "pg_cov", "pg_ml"), ("intra-decoder attention", "r_ml", "r_noid"),
         ("intra-temporal attention", "r_ml", "r_nota"), ("both intra-attentions", "r_ml", "r_none"),
         ("pointer + coverage vs intra-attention (ML)", "pg_cov", "r_ml"),
         ("scheduled sampling 0.25 (from the first step)", "r_ml", "r_ss0"),
         ("scheduled sampling ramped over 1,000 steps", "r_ssramp", "r_ss0")]
