"""bench/compare_upstream.py's table: one row per figure, ours against upstream, and the translation rows
per -precision."""


def precision_rows(a, res):
    """The table's rows of translation speed per -precision: ours against upstream at the same precision
    (upstream has no bf16: ours against upstream's fastest setting on the device there, int8 on the CPU,
    fp16 on CUDA)."""
    def mean(side, key):
        vals = [r.get(key) for r in res[side]]
        return sum(vals) / len(vals) if vals and None not in vals else None
    fastest = "fp16" if getattr(a, "device", "cpu") == "cuda" else "int8"
    lines = []
    for precision in a.precisions:
        key = f"tr_sents_s_{precision}"
        ours, theirs = mean("ours", key), mean("upstream", key)
        failed = [r[f"tr_failed_{precision}"] for r in res["upstream"] if f"tr_failed_{precision}" in r]
        against = ("" if theirs else f" (upstream: failed, {failed[0]}; ratio to its {fastest})" if failed
                   else f" (upstream: none; ratio to its {fastest})")
        theirs = theirs or mean("upstream", f"tr_sents_s_{fastest}")
        def cell(side, key=key, precision=precision):
            return " / ".join(f"{r[key]:.2f}" if key in r else "failed" if f"tr_failed_{precision}" in r
                              else "-" for r in res[side])
        lines.append(f"| translation sentences/s at -precision {precision}{against} | {cell('ours')} | "
                     f"{cell('upstream')} | {f'{ours / theirs:.2f}×' if ours and theirs else ''} |")
    return lines


def print_table(a, res, ev):
    def cells(side, key, fmt):
        vals = [r[key] for r in res[side]]
        return " / ".join(fmt.format(v) for v in vals)

    def ratio(key):
        o = sum(r[key] for r in res["ours"]) / len(res["ours"])
        u = sum(r[key] for r in res["upstream"]) / len(res["upstream"])
        return f"{o / u:.2f}×" if u else "-"

    rows = [
        ("parameters", "params", "{:,}", False),
        ("vocabulary (shared, with specials)", "vocab", "{:,}", False),
        ("training target tokens/s", "tgt_tok_s", "{:.0f}", True),
        ("training sentences/s", "sents_s", "{:.1f}", True),
        ("training process: wall s (incl. start-up, validation, save)", "train_wall", "{:.0f}", True),
        ("training peak RSS, MiB", "train_rss", "{:.0f}", True),
        (f"validation perplexity after {a.steps} steps", "valid_ppl", "{:.2f}", False),
        (f"translation sentences/s (beam {a.beam_size}, batch 32, length {a.length})", "tr_sents_s", "{:.2f}", True),
        ("translation peak RSS, MiB", "tr_rss", "{:.0f}", True),
        ("translation output length (tokens, mean)", "out_len", "{:.1f}", False),
    ]
    print()
    print(f"Ours vs upstream OpenNMT-py 3.5.1 on {'GPU 0' if getattr(a, 'device', 'cpu') == 'cuda' else 'the CPU'}, "
          f"{a.steps} steps, {a.translate_n} sentences, {a.rounds} round(s) A B{' A B' * (a.rounds - 1)} "
          "(values per round)")
    print("| figure | ours | upstream | ours / upstream |")
    print("| --- | --- | --- | --- |")
    for label, key, fmt, show_ratio in rows:
        if not all(key in r for side in res for r in res[side]):
            continue
        print(f"| {label} | {cells('ours', key, fmt)} | {cells('upstream', key, fmt)} | "
              f"{ratio(key) if show_ratio else ''} |")
        if key == "tr_sents_s":
            print("\n".join(precision_rows(a, res)))
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
    for m, name in names.items():
        o, u, p = ev[m], ev["pred2"][m], ev["paired"][m]
        print(f"| {name} F1 (last round; paired bootstrap p of ours > upstream) | {o['f']:.2f} | {u['f']:.2f} | "
              f"Δ {p['delta_f']:+.2f}, p = {p['p_value_f']:.3f} |")
    print()
    print("Notes: OMP_NUM_THREADS=1 per process, one process at a time; peak RSS of each process tree polled from "
          "/proc every 0.1 s. Tokens/s: each side's logged target-token rate, mean after the first report "
          "(both count the target tokens of the loss, </s> included). Translation: the translation call alone "
          "(no start-up or model load), fixed output length, so the speed does not depend on what was learned; "
          "ROUGE is of these forced-length outputs (a speed setting, not a quality one). Upstream: "
          "-reuse_copy_attn (sizes as the pointer-generator), perplexity without its coverage term, "
          "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, copy checkpoint keys moved (issue #2503) and the inference "
          "iterator built with copy support (KeyError 'src_map'), patched at import time by "
          "bench/upstream_wrapper.py; its site-packages are untouched.")
