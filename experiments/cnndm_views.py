"""experiments/cnndm.py's tuning and scoring of a view, and the figures of a summary file.

    tune_view   onmt_tune_decoding over the view's checkpoints x length rules on the tuning pairs
    score_view  development and test with what tuning chose -> -results/VIEW.json
    figures     ROUGE-1/2/L/Lsum F1 (and per example), length, sentences, repeated trigrams, novel
                n-grams, copy share of one split's predictions
"""
import os

from experiments.cnndm_arms import ALPHAS, ARMS, METRIC, MIN_LENGTHS, SEARCH, WIDEN
from experiments.common import run
from experiments.rl_vs_ml import read_json, write_json

SAMPLE_LINES = (0, 1, 2)      # the test articles whose summaries the report shows, for every system
NOVEL_N = (1, 2, 3, 4)


def view_folder(a, view):
    return os.path.join(a.workdir, "tuned", view)


def chosen_model(folder):
    """The checkpoint a view's tuning chose (FileNotFoundError before it is tuned)."""
    import yaml
    with open(os.path.join(folder, "chosen.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)["model"]


def checkpoint_step(path):
    import torch
    return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["step"])


def tune_view(a, view, candidates):
    """onmt_tune_decoding over `candidates` x ALPHAS x MIN_LENGTHS on the tuning pairs -> chosen.yaml, grid.json."""
    folder = view_folder(a, view)
    os.makedirs(folder, exist_ok=True)
    src, tgt = os.path.join(a.workdir, "data", "tune.src.txt"), os.path.join(a.workdir, "data", "tune.tgt.txt")
    run(["-m", "onmt.bin.tune_decoding", "-model", *candidates, "-src", src, "-tgt", tgt, "-alpha", *ALPHAS,
         "-min_length", *MIN_LENGTHS, *WIDEN, *SEARCH[ARMS[view].family], "-metric", METRIC, "-batch_size", "32",
         "-output", f"{folder}/chosen.yaml", "-report", f"{folder}/grid.json"], log=f"{folder}/tune.log")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def copied_marks(dump):
    """Per prediction, one bool per word: copied by the pointer (onmt/translate/records.py's rule)."""
    from onmt.translate.records import read_dump
    return [[bool(c) for c in r["copied"]] for r in read_dump(dump)]


def decode(config, src, pred, more=()):
    """translate.py with a chosen.yaml; returns the copy marks (the -attn_debug dump, large at CNN/DM's
    lengths, is read into a small JSON and removed)."""
    marks = pred + ".copied.json"
    if not os.path.exists(pred) or not os.path.exists(marks):
        dump = pred + ".npz"
        run(["translate.py", "-config", config, "-src", src, "-output", pred + ".tmp", "-batch_size", "32",
             "-attn_debug", dump, *more], log=pred + ".log")
        write_json(marks, copied_marks(dump))
        os.replace(pred + ".tmp", pred)
        os.remove(dump)
    return read_json(marks)


def lead3(src, pred):
    """tools/lead_baseline.py -sentences 3 on the uncut articles."""
    if not os.path.exists(pred):
        run(["tools/lead_baseline.py", "-src", src, "-output", pred, "-sentences", "3"])
    return read_lines(pred)


def figures(preds, srcs, refs, copied=None, official=False):
    """The figures of one split. ROUGE: the built-in scorer (ROUGE-1.5.5's numbers), with `official` also
    the Perl script's; ROUGE-Lsum splits each summary into sentences at ` . ` (onmt/evaluation/text.py)."""
    from onmt.evaluation import METRICS, score, summarize
    from onmt.evaluation.diagnostics import novel_ngrams, summary_diagnostics
    from onmt.evaluation.text import split_sentences
    scores = score(preds, refs)                                              # (n, 4, 3)
    n = max(len(preds), 1)
    out = {"rouge": {m: round(v["f"], 4) for m, v in summarize(scores).items()},
           "per_example": {m: [round(float(x), 4) for x in scores[:, i, 2]] for i, m in enumerate(METRICS)},
           **summary_diagnostics(preds, srcs, refs, copied),
           "sentences": sum(len(split_sentences(p)) for p in preds) / n,
           "ref_sentences": sum(len(split_sentences(r)) for r in refs) / n,
           "novel_ngrams": {}}
    for k in NOVEL_N:
        counts = [novel_ngrams(p.split(), s.split(), k) for p, s in zip(preds, srcs)]
        out["novel_ngrams"][str(k)] = 100.0 * sum(c for c, _ in counts) / max(sum(t for _, t in counts), 1)
    if official:
        from onmt.evaluation.official import OfficialUnavailable
        try:
            out["rouge_official"] = {m: round(v["f"], 4)
                                     for m, v in summarize(score(preds, refs, official=True)).items()}
        except OfficialUnavailable as e:
            out["rouge_official"] = str(e)
    return out


def samples(preds, lines=SAMPLE_LINES):
    """{line: the prediction detokenized, sentence case} for the report's sample articles."""
    from onmt.prepare.detokenize import detokenize
    return {str(i): detokenize(preds[i], sentence_case=True) for i in lines if i < len(preds)}


def head(path, n, out):
    """The first n lines of `path` written to `out` once; returns `out`."""
    if not os.path.exists(out):
        with open(out + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in read_lines(path)[:n])
        os.replace(out + ".tmp", out)
    return out


def score_view(a, view, splits):
    """Development and test predictions with what tuning chose; the figures into -results/VIEW.json."""
    folder = view_folder(a, view)
    os.makedirs(folder, exist_ok=True)
    result = {"view": view, "tune_pairs": a.tune_pairs}
    if view == "lead3":
        result["family"] = "lead"
    else:
        import torch
        result.update(family=ARMS[view].family, description=ARMS[view].description,
                      tuning=read_json(f"{folder}/grid.json"))
        from onmt.utils.checkpoint import weights_digest
        ck = torch.load(result["tuning"]["chosen"]["model"], map_location="cpu", weights_only=True, mmap=True)
        result.update(step=int(ck["step"]), train_seconds=float(ck.get("train_seconds", 0.0)),
                      weights_sha256=weights_digest(ck["model"]))
    for split in ("dev", "test"):
        src, tgt = splits[split]
        pred = f"{folder}/{split}.txt"
        if view == "lead3":
            preds = lead3(src, pred)
            copied = [[True] * len(p.split()) for p in preds]          # every word comes from the article
        else:
            copied = decode(f"{folder}/chosen.yaml", src, pred)
            preds = read_lines(pred)
        result[split] = figures(preds, read_lines(src), read_lines(tgt), copied, official=split == "test")
        if split == "test":
            result.update(samples=samples(preds), sample_refs=samples(read_lines(tgt)))
            if result["family"] == "reinforced":     # its trigram blocking off, for the repetition it prevents
                n = min(a.noblock_pairs, len(preds))
                src_head = head(src, n, os.path.join(a.workdir, "data", f"test_head{n}.src.txt"))
                decode(f"{folder}/chosen.yaml", src_head, f"{folder}/test_noblock.txt", ["-block_ngram_repeat", "0"])
                off = figures(read_lines(f"{folder}/test_noblock.txt"), read_lines(src)[:n], read_lines(tgt)[:n])
                on = figures(preds[:n], read_lines(src)[:n], read_lines(tgt)[:n])
                result["noblock"] = {"pairs": n, "repeated_trigrams": off["repeated_trigrams"],
                                     "repeated_trigrams_blocked": on["repeated_trigrams"],
                                     "rouge": off["rouge"], "rouge_blocked": on["rouge"]}
    if view != "lead3":
        result.update(start=ARMS[view].start, phase_seconds=result["train_seconds"] - start_seconds(a, view))
    write_json(os.path.join(a.results, f"{view}.json"), result)
    return result


def start_seconds(a, view):
    """The training CPU seconds of the checkpoint view's arm started from (0 for an ML phase)."""
    from experiments.rl_vs_ml import train_seconds
    start = ARMS[view].start
    if start is None:
        return 0.0
    if start == "r_ml":
        return train_seconds(chosen_model(view_folder(a, "r_ml")))
    return train_seconds(os.path.join(a.workdir, "arms", start, "model_best.pt"))
