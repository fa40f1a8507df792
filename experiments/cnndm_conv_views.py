"""experiments/cnndm_conv.py's tuning of one checkpoint and scoring of a view.

    tune_checkpoint  onmt_tune_decoding -widen -match_output on the tuning pairs -> R/tuning/ARM@STEP.json
    score_view       development and test at the tuned and at the length-matched rule -> R/VIEW.json
"""
import os

from experiments import cnndm_conv_arms as P
from experiments import cnndm_conv_stages as st
from experiments.cnndm_views import decode, figures, head, read_lines, samples
from experiments.common import run
from experiments.rl_vs_ml import read_json, write_json
from onmt.evaluation.breakdown import reference_overlap

ROW_KEYS = ("setting", "rouge", "length")


def tune_folder(a, arm, step):
    return os.path.join(a.workdir, "tuned", f"{arm}@{step}")


def tune_checkpoint(a, arm, step):
    """Tune checkpoint (arm, step) on its own: its rule and its length-matched rule, the rows and where
    each chosen value sits on its axis, into R/tuning/ARM@STEP.json."""
    import torch

    from onmt.utils.checkpoint import weights_digest
    c, folder = a.cfg, tune_folder(a, arm, step)
    os.makedirs(folder, exist_ok=True)
    model = st.checkpoint(a, arm, step)
    src, tgt = os.path.join(a.workdir, "data", "tune.src.txt"), os.path.join(a.workdir, "data", "tune.tgt.txt")
    if not os.path.exists(f"{folder}/grid.json"):
        run(["-m", "onmt.bin.tune_decoding", "-model", model, "-src", src, "-tgt", tgt, "-alpha", *c.alphas,
             "-min_length", *c.min_lengths, *c.widen, *c.search, "-metric", P.METRIC, "-batch_size", c.tune_batch,
             "-output", f"{folder}/chosen.yaml", "-match_output", f"{folder}/matched.yaml",
             "-report", f"{folder}/grid.json"], log=f"{folder}/tune.log")
    g = read_json(f"{folder}/grid.json")
    best = g["rows"][g["best"]]
    strip = lambda conf: {k: v for k, v in conf.items() if k != "model"}       # noqa: E731
    ck = torch.load(model, map_location="cpu", weights_only=True, mmap=True)
    m = g["matched"]
    write_json(os.path.join(a.results, "tuning", f"{arm}@{step}.json"),
               {"arm": arm, "step": step, "weights_sha256": weights_digest(ck["model"]),
                "train_seconds": float(ck.get("train_seconds", 0.0)), "config": strip(g["chosen"]),
                "rouge": best["rouge"], "length": best["length"], "ref_length": best["ref_length"],
                "edges": g["edges"], "axes": g["axes"],
                "matched": {"config": strip(m["chosen"]), "rouge": m["rouge"], "length": m["length"],
                            "target": m["target"], "probes": m["probes"]},
                "rows": [{k: r[k] for k in ROW_KEYS} for r in g["rows"]]})


def write_config(path, model, config):
    import yaml

    from onmt.utils.files import write_text_atomic
    write_text_atomic(path, yaml.safe_dump({"model": os.path.abspath(model), **config}, default_flow_style=False,
                                           sort_keys=False))
    return path


def score_view(a, view, splits):
    """A view: its candidate of highest tuned tuning R-Lsum, decoded on development and test at its tuned
    rule and at its length-matched rule; the figures into R/VIEW.json."""
    choice = st.view_choice(a, view)
    if choice is None:
        raise SystemExit(f"{view}: its candidates are not all tuned yet")
    arm, step = choice["chosen"]
    model, tuned = st.checkpoint(a, arm, step), choice["tuning"]
    folder = os.path.join(a.workdir, "views", view)
    os.makedirs(folder, exist_ok=True)
    configs = {"": write_config(f"{folder}/chosen.yaml", model, tuned["config"]),
               "_matched": write_config(f"{folder}/matched.yaml", model, tuned["matched"]["config"])}
    result = {"view": view, "description": description(a, view, P.ARMS[arm]), "arm": arm, "step": step,
              **{k: choice[k] for k in ("candidates", "scores")},
              "tuning": {k: tuned[k] for k in ("config", "rouge", "length", "ref_length", "edges", "axes")},
              "matched": tuned["matched"], "train_seconds": tuned["train_seconds"],
              "weights_sha256": tuned["weights_sha256"], "tune_pairs": len(read_lines(splits["tune"][1]))}
    for split in ("dev", "test"):
        src, tgt = splits[split]
        for tag, config in configs.items():
            pred = f"{folder}/{split}{tag}.txt"
            copied = decode(config, src, pred)
            preds = read_lines(pred)
            result[split + tag] = figures(preds, read_lines(src), read_lines(tgt), copied,
                                          official=split == "test" and not tag)
            if split == "test" and not tag:
                result.update(samples=samples(preds), sample_refs=samples(read_lines(tgt)))
        # per article, for the report's breakdown: how much its reference copies its source, its length
        result[split + "_articles"] = {
            "overlap": [round(reference_overlap(x, y), 4) for x, y in zip(read_lines(src), read_lines(tgt))],
            "ref_length": [len(y.split()) for y in read_lines(tgt)]}
    n = min(a.cfg.noblock_pairs, len(read_lines(splits["test"][0])))
    src_head = head(splits["test"][0], n, os.path.join(a.workdir, "data", f"test_head{n}.src.txt"))
    decode(configs[""], src_head, f"{folder}/test_noblock.txt", ["-block_ngram_repeat", "0"])
    srcs, refs = read_lines(splits["test"][0])[:n], read_lines(splits["test"][1])[:n]
    off = figures(read_lines(f"{folder}/test_noblock.txt"), srcs, refs)
    on = figures(read_lines(f"{folder}/test.txt")[:n], srcs, refs)
    result["noblock"] = {"pairs": n, "repeated_trigrams": off["repeated_trigrams"],
                         "repeated_trigrams_blocked": on["repeated_trigrams"]}
    write_json(os.path.join(a.results, f"{view}.json"), result)
    return result


def description(a, view, arm):
    if view == "start":
        s = st.start(a)
        return f"the start of the later arms: ML with scheduled sampling {P.SS[s['ss']]}, converged"
    if view.startswith("ml"):
        return arm.description + " (to its plateau: early stopping and the gate)"
    return arm.description
