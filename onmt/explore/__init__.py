"""The summary explorer: one self-contained HTML page of articles, references and systems'
summaries, with copying, novelty, repetition and attention marked (onmt_explore,
onmt/bin/explore.py; docs/explorer.md).

    marks.py     what is marked on a summary word; attention as each step's strongest positions
    data.py      reading the systems (dumps or prediction files), the page's JSON, the corpus
                 figures
    summary.py   the summary panel: figures per system, the chart of the ROUGE difference
                 (inline SVG)
    page.py      the HTML (page.css and page.js inlined), the JSON safely embedded, the atomic write
"""
