"""The explorer's one self-contained HTML file: the summary panel, the controls, the data as JSON
and the page's CSS and JS (page.css, page.js beside this file), all inline; nothing is fetched, and
the page's Content-Security-Policy forbids fetching anything.

    html = page_html(data, summary, title)
        # data: data.page_data's dict; summary: summary.summary_html
    size = write_page(path, html)
        # atomically (temporary file, then rename); bytes written

Every text of the data reaches the page through the JSON and the script's textContent, never as
HTML; `embed_json` escapes "<", ">" and "&" inside it so that no "</script>" or "<!--" in an article
can end or change the script element that holds it.
"""
import json
import os
from html import escape

from onmt.utils.files import write_text_atomic

HERE = os.path.dirname(os.path.abspath(__file__))
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def asset(name):
    """The text of page.css or page.js (package data, inlined at write time)."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def embed_json(obj):
    """JSON text safe inside <script type="application/json">: "<", ">", "&" (only ever inside
    strings) as \\u escapes, and U+2028 / U+2029 too; JSON.parse gives back exactly `obj`."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


CONTROLS = """
<nav id=controls aria-label="Order, filter and move between articles">
 <div class=row>
  <label>Sort <select id=sort>
   <option value=line>input order</option>
   <option value=diff-desc>difference A − B, largest first</option>
   <option value=diff-asc>difference A − B, smallest first</option>
   <option value=absdiff>|A − B|, largest first</option>
   <option value=ov-asc>source–reference overlap, lowest first</option>
   <option value=ov-desc>source–reference overlap, highest first</option>
   <option value=len-desc>source length, longest first</option>
   <option value=len-asc>source length, shortest first</option>
   <option value=a-asc>A's ROUGE, lowest first</option>
  </select></label>
  <label>ROUGE <select id=metric><option value=0>ROUGE-1</option><option value=1>ROUGE-2</option>
   <option value=2 selected>ROUGE-L</option></select></label>
  <label>A <select id=sysA></select></label> <label>B <select id=sysB></select></label>
 </div>
 <div class=row>
  <label>overlap % <input id=ovMin type=number min=0 max=100 value=0 size=3> to
   <input id=ovMax type=number min=0 max=100 value=100 size=3></label>
  <label>source words <input id=lenMin type=number min=0 value=0 size=4> to
   <input id=lenMax type=number min=0 value="" placeholder=any size=4></label>
  <label>show <select id=winner><option value=all>all</option><option value=a>A better</option>
   <option value=b>B better</option><option value=tie>ties</option></select></label>
  <label>search <input id=search type=search placeholder="words in source, reference or summaries"
   aria-describedby=keys></label>
 </div>
 <div class=row>
  <button id=prev type=button aria-label="previous article (k)">◀ previous</button>
  <span id=pos aria-live=polite></span>
  <button id=next type=button aria-label="next article (j)">next ▶</button>
  <span id=keys class=note>keys: j / k next / previous, / search, Tab to a summary word (← → between
   words) to see its attention</span>
 </div>
 <ol id=list aria-label="articles in this order"></ol>
</nav>
"""

LEGEND = """
<p class=legend>Summary words: <span class="w cp">pointer</span> copied by the pointer
(solid underline), <span class="w src">in source</span> also in the source (dotted underline),
<span class="w nov">novel</span> not in the source (italic), <span class="w rep">repeated</span>
in a repeated trigram (wavy overline). Hovering or focusing a summary word shades the
<span class="w att att-top">source words</span> it attends to (the strongest boxed) and, for the
reinforced model, the <span class="w intra intra-top">earlier summary words</span> it attends
to.</p>
"""


def page_html(data, summary, title):
    systems = ", ".join(data["systems"])
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<meta http-equiv=Content-Security-Policy content=\"{CSP}\">"
        f"<title>{escape(title)}</title><style>{asset('page.css')}</style></head>\n<body>\n"
        f"<header><h1>{escape(title)}</h1><p class=note>{len(data['articles'])} articles · "
        f"systems: {escape(systems)}</p></header>\n"
        f"<details id=summary open><summary>Corpus figures</summary>{summary}</details>\n"
        f"{CONTROLS}{LEGEND}<main id=view aria-live=polite></main>\n"
        f"<script type=application/json id=data>{embed_json(data)}</script>\n"
        f"<script>{asset('page.js')}</script>\n</body></html>\n")


def write_page(path, html, what=None):
    """Write the page atomically; its size in bytes."""
    write_text_atomic(path, html, what or f"-output {path}")
    return len(html.encode("utf-8"))     # not the path's size: `-` and /dev/null have none
