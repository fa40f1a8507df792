"""The page's summary panel, written once in Python: the corpus figures per system and one chart.

    summary_html(figures, pair, data) -> str     a table (ROUGE F1 with bootstrap 95% intervals,
                                                 length, copy share, novel bigrams, repeated
                                                 trigrams; the paired test of the first two systems)
                                                 and the SVG chart
    difference_chart(data) -> str                inline SVG: per article, ROUGE-L F1 of the first
                                                 system minus the second's (one system: its ROUGE-L)
                                                 against the share of reference words found in the
                                                 source; the mean per overlap bucket as a line. A
                                                 point is a link to its article (data-article).

Every text is escaped here (html.escape): a system's name or path is the user's text.
"""
from html import escape

import numpy as np

from onmt.evaluation.breakdown import OVERLAP_EDGES, bucket_of

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 360, 200, 40, 32, 10, 8


def _fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def figures_table(figures, pair):
    head = ("<tr><th scope=col>system</th><th scope=col>ROUGE-1</th><th scope=col>ROUGE-2</th>"
            "<th scope=col>ROUGE-L</th><th scope=col>length</th><th scope=col>copy share %</th>"
            "<th scope=col>novel bigrams %</th><th scope=col>repeated trigrams %</th></tr>")
    rows = []
    for f in figures:
        cells = [f"<th scope=row title='{escape(f['path'], quote=True)}'>{escape(f['name'])}</th>"]
        for m in ("R1", "R2", "RL"):
            mean, lo, hi = f["rouge"][m]
            cells.append(f"<td>{mean:.2f} <small>[{lo:.2f}, {hi:.2f}]</small></td>")
        cells += [f"<td>{_fmt(f['length'], 1)}</td>", f"<td>{_fmt(f['copy_share'], 1)}</td>",
                  f"<td>{_fmt(f['novel_bigrams'], 1)}</td>",
                  f"<td>{_fmt(f['repeated_trigrams'], 1)}</td>"]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    ref_len = figures[0]["ref_length"] if figures else 0.0
    note = ("<p class=note>ROUGE F1 × 100, built-in scorer (ROUGE-1.5.5's settings), bootstrap 95% "
            f"intervals; references: {ref_len:.1f} words on average. Copy share: "
            "words the pointer produced (dumps only).")
    if pair:
        d = ", ".join(f"{m} {pair['delta'][m]:+.2f} (p = {pair['p'][m]:.3f})"
                      for m in ("R1", "R2", "RL"))
        note += (f" <b>{escape(pair['a'])}</b> − <b>{escape(pair['b'])}</b>: {d}, one-sided paired "
                 f"bootstrap p-value of “{escape(pair['a'])} scores higher”.")
    return (f"<div class=scroll tabindex=0 role=region aria-label='corpus figures per system'>"
            f"<table class=figures><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
            f"</div>{note}</p>")


def difference_chart(data):
    arts = data["articles"]
    x = np.array([a["o"] for a in arts], dtype=np.float64) / 100                          # (n,)
    rl = [np.array([a["y"][k]["f"][2] for a in arts], dtype=np.float64)
          for k in range(len(data["systems"]))]
    two = len(rl) >= 2
    y = rl[0] - rl[1] if two else rl[0] if rl else np.zeros(len(arts))                    # (n,)
    lim = max(float(np.abs(y).max()) if len(y) else 0.0, 1.0)
    lo, hi = (-lim, lim) if two else (0.0, max(lim, 1.0))
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def px(v):
        return PAD_L + v * pw

    def py(v):
        return PAD_T + (hi - v) / (hi - lo) * ph

    what = (f"ROUGE-L F1 of {data['systems'][0]} minus {data['systems'][1]}" if two
            else f"ROUGE-L F1 of {data['systems'][0]}" if rl else "no system")
    parts = [f"<svg class=chart viewBox='0 0 {W} {H}' width={W} height={H} role=img "
             f"aria-label='{escape(what, quote=True)} per article, against the share of reference "
             "words in the source'>",
             f"<title>{escape(what)} per article against source–reference overlap</title>",
             f"<rect x={PAD_L} y={PAD_T} width={pw} height={ph} class=frame />"]
    for v in (lo, 0.0, hi) if two else (lo, hi / 2, hi):
        cls, label = ("zero" if two and v == 0 else "grid"), (f"{v:+.0f}" if two else f"{v:.0f}")
        parts.append(f"<line x1={PAD_L} x2={W - PAD_R} y1={py(v):.1f} y2={py(v):.1f} class={cls} />"
                     f"<text x={PAD_L - 4} y={py(v) + 4:.1f} text-anchor=end>{label}</text>")
    for v in (0, 0.5, 1):
        parts.append(f"<text x={px(v):.1f} y={H - PAD_B + 14} text-anchor=middle>{v:g}</text>")
    parts.append(f"<text x={PAD_L + pw / 2:.1f} y={H - 4} "
                 "text-anchor=middle>share of reference words in the source</text>")
    for i, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
        parts.append(f"<circle cx={px(a):.1f} cy={py(b):.1f} r=2.2 data-article={i} />")
    bucket = bucket_of(x, OVERLAP_EDGES)
    means = []
    for k in range(len(OVERLAP_EDGES) - 1):
        m = bucket == k
        if m.any():
            mid = (OVERLAP_EDGES[k] + OVERLAP_EDGES[k + 1]) / 2
            means.append(f"{px(mid):.1f},{py(float(y[m].mean())):.1f}")
    if means:
        parts.append(f"<polyline points='{' '.join(means)}' class=mean />")
    parts.append("</svg>")
    return "".join(parts)


def summary_html(figures, pair, data):
    what = ("per article: ROUGE-L difference of the first two systems (points; a point opens its "
            "article), the line joins the means of the thirds of overlap" if pair
            else "per article: ROUGE-L F1")
    return (f"<div class=panel><div class=figs>{figures_table(figures, pair)}</div>"
            f"<figure>{difference_chart(data)}<figcaption>{escape(what)}</figcaption>"
            f"</figure></div>")
