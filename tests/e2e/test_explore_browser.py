"""The explorer's page in a real browser: headless Chromium opens it from disk (bench/lib/browser.py, the
DevTools protocol on a pipe) and is driven as a reader would: no network request, the first article shown,
markup in an article shown and never run, hovering a copied word boxes the source word of the dump's
attention argmax, the sort by ROUGE difference, the keyboard, a narrow window, a screenshot that is not blank.
Skips only where no Chromium is found ($CHROMIUM, or chromium / google-chrome on the PATH)."""
import json
import pathlib

import numpy as np
import pytest

from bench.lib.browser import Browser, find_chromium
from helpers.explore_inputs import REFERENCES, SOURCES, records, write_inputs
from onmt.bin.explore import main
from onmt.explore.data import read_system, rouge_f1

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to drive (install chromium, or set $CHROMIUM)")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explore")
    paths = write_inputs(str(folder))
    out = folder / "page.html"
    main(["-src", paths["src"], "-ref", paths["ref"], "-system", paths["a"], paths["b"], "-names", "A", "B",
          "-output", str(out), "-bootstrap", "100"])
    with Browser(CHROMIUM, 1280, 800) as b:
        url = pathlib.Path(out).as_uri()
        b.navigate(url, ready="document.body.dataset.ready")
        yield b, url, paths, folder


def shown(b):
    return int(b.evaluate("document.querySelector('section.article').dataset.article"))


def test_opens_from_disk_without_a_network_request(page):
    b, url, _, _ = page
    other = [u for u in b.requests() if u != url and not u.startswith("data:")]
    assert not other
    assert not [e for e in b.events if e.get("method") == "Runtime.exceptionThrown"]     # the script ran clean
    assert b.evaluate("document.getElementById('pos').textContent").startswith("article 1 of 4")


def test_first_article_shown_with_its_markup_as_text(page):
    b, _, _, _ = page
    assert shown(b) == 0
    assert b.evaluate("[...document.querySelectorAll('#src .w')].map(e => e.textContent).join(' ')") == SOURCES[0]
    assert b.evaluate("window.__xss === undefined && document.querySelectorAll('#view img, #view script').length "
                      "=== 0")
    assert b.evaluate("document.querySelector('.col.ref .text').textContent.trim()") == REFERENCES[0]


def test_hovering_a_copied_word_boxes_its_source_argmax(page):
    b, _, _, _ = page
    rec = records()[0]
    for t in np.flatnonzero(rec["copied"]).tolist():
        word = f".summary[data-sys='0'] .w[data-t='{t}']"
        assert b.evaluate(f"document.querySelector(\"{word}\").classList.contains('cp')")
        b.hover(word)
        top = b.evaluate("[...document.querySelectorAll('#src .att-top')].map(e => +e.dataset.pos)")
        assert top == [int(rec["attn"][t].argmax())]
        assert b.evaluate("document.querySelectorAll('#src .att').length") >= 1
        intra = b.evaluate("[...document.querySelectorAll(\".summary[data-sys='0'] .intra-top\")]"
                           ".map(e => +e.dataset.t)")
        assert intra == ([] if t == 0 else [int(rec["intra"][t, :t].argmax())])
        assert f"word {t + 1} of A" in b.evaluate("document.getElementById('status').textContent")


def test_sort_by_rouge_difference_puts_the_largest_first_and_keys_move(page):
    b, _, paths, _ = page
    refs = REFERENCES
    f1 = [np.round(rouge_f1(read_system(paths[k], SOURCES)["preds"], refs)[:, 2], 1) for k in "ab"]
    diff = f1[0] - f1[1]
    order = sorted(range(len(diff)), key=lambda i: (-diff[i], i))
    b.evaluate("(() => { const s = document.getElementById('sort'); s.value = 'diff-desc'; "
               "s.dispatchEvent(new Event('change')); })()")
    assert shown(b) == order[0] == int(np.argmax(diff))
    b.evaluate("document.activeElement && document.activeElement.blur()")
    b.key("j")
    assert shown(b) == order[1]
    b.key("k")
    assert shown(b) == order[0]
    b.key("/")
    assert b.evaluate("document.activeElement.id") == "search"


def test_search_filters_and_a_focused_word_highlights(page):
    b, _, _, _ = page
    b.evaluate("(() => { const s = document.getElementById('search'); s.value = 'tokyo'; "
               "s.dispatchEvent(new Event('input')); })()")
    b.evaluate("new Promise(ok => setTimeout(ok, 300))")
    assert b.evaluate("document.getElementById('pos').textContent").startswith("article 1 of 1")
    assert shown(b) == 2
    b.evaluate("document.querySelector(\".summary[data-sys='0'] .w[data-t='0']\").focus()")
    assert b.evaluate("[...document.querySelectorAll('#src .att-top')].map(e => +e.dataset.pos)") == \
        [int(records()[2]["attn"][0].argmax())]
    b.evaluate("(() => { const s = document.getElementById('search'); s.value = ''; "
               "s.dispatchEvent(new Event('input')); })()")
    b.evaluate("new Promise(ok => setTimeout(ok, 300))")


def test_screenshot_is_not_blank_and_a_narrow_window_does_not_overflow(page):
    b, _, _, folder = page
    png = b.screenshot(str(folder / "shot.png"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and (folder / "shot.png").stat().st_size > 1000
    assert b.distinct_colours(png) > 8
    b.resize(420, 800)
    try:
        assert b.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        b.resize(1280, 800)
    assert json.loads(json.dumps(b.requests())) == b.requests()
