"""Summaries as ROUGE-1.5.5 reads them: sentences, length limits, tokens.

A summary is one line of a file. Its sentences (for ROUGE-Lsum) are the contents of `<t> ... </t>`
tags when it has them, else the runs of whitespace tokens ending with a `.` token (the CNN/DM
convention, ` . ` between sentences); `sentence_marker=""` keeps one sentence. `read_sent_per_line`
reads the other common layout, one sentence per line and an empty line after each summary.

Both scorers (the built-in one and ROUGE-1.5.5 itself, official.py) start from the same
sentences: each sentence is its whitespace tokens joined by one space. From there this module does
what ROUGE-1.5.5 does with a summary file of one sentence per line (its SPL format):
- a length limit, in words (`-l`: whitespace tokens) or in bytes (`-b`: UTF-8 bytes of the text,
  the spaces between sentences not counted), cuts the text, the last sentence mid-way if needed.
  ROUGE-1.5.5 applies it to references as well as predictions, and it forgets to add up the
  sentences' bytes when it prepares the sentences for ROUGE-L, so there each sentence is held to
  the byte limit on its own; `limited_sentences(..., for_lcs=True)` does the same;
- tokens are the runs of ASCII letters and digits, lowercased (`A-Z` only). Everything else,
  hyphens, punctuation and every non-ASCII character included, separates tokens ("e-mail" is
  "e" "mail", "café" is "caf").
"""
import re

_TOKEN = re.compile(r"[A-Za-z0-9]+")
_TOKEN_OR_NL = re.compile(r"[A-Za-z0-9]+|\n")
_WS = re.compile(r"[ \t\n\r\f\v]+")       # Perl's \s on bytes: ASCII whitespace only
_NOT_PERL_WS = re.compile("[\x1c-\x1f]")      # ASCII characters that str.split() also splits on
# a token, or a "." that is a whitespace token of its own (a sentence end)
_TOKEN_OR_DOT = re.compile(r"[A-Za-z0-9]+|(?<![^ \t\n\r\f\v])\.(?![^ \t\n\r\f\v])")


def words(text):
    """Whitespace tokens as Perl's split(/\\s+/) gives them after the text was stripped."""
    if text.isascii() and not _NOT_PERL_WS.search(text):
        return text.split()
    return [w for w in _WS.split(text) if w]


def split_sentences(line, sentence_marker="."):
    """One summary line -> its sentences, each a string of single-space-joined tokens."""
    toks = words(line)
    if ("<t>" in line or "</t>" in line) and ("<t>" in toks or "</t>" in toks):
        sents, cur, inside = [], [], False
        for t in toks:
            if t == "<t>":
                inside, cur = True, []
            elif t == "</t>":
                if cur:
                    sents.append(" ".join(cur))
                inside, cur = False, []
            elif inside:
                cur.append(t)
        return sents
    if not sentence_marker:
        return [" ".join(toks)] if toks else []
    sents, start = [], 0
    while start < len(toks):
        try:
            end = toks.index(sentence_marker, start) + 1
        except ValueError:
            end = len(toks)
        sents.append(" ".join(toks[start:end]))
        start = end
    return sents


def read_sent_per_line(lines):
    """Lines with one sentence each, an empty line closing each summary -> list of sentence lists.
    (An empty line right after a closing one is an empty summary; the last summary may lack it.)"""
    out, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(" ".join(words(line)))
        else:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def limited_sentences(sents, limit_words=0, limit_bytes=0, for_lcs=False):
    """The sentences kept under a word or byte limit (0: none), cut as ROUGE-1.5.5 cuts them."""
    if not limit_words and not limit_bytes:
        return sents
    out, used = [], 0
    for s in sents:
        if limit_words:
            ws = words(s)
            if used + len(ws) < limit_words:
                out.append(s)
                used += len(ws)
                continue
            out.append(" ".join(ws[:limit_words - used]))
            break
        b = s.encode("utf-8")
        if used + len(b) < limit_bytes:
            out.append(s)
            if not for_lcs:          # ROUGE-1.5.5's sentence-level reader never adds them up
                used += len(b)
            continue
        out.append(b[:limit_bytes - used].decode("utf-8", errors="ignore"))
        break
    return out


def tokens(text):
    """ROUGE-1.5.5's tokens of a text: ASCII letter/digit runs, lowercased."""
    return _TOKEN.findall(_lower(text))


def sentence_tokens_flat(sents):
    """`tokens` of all the sentences in one list, "\n" after each sentence but the last (one pass
    over the summary; sentences hold no newline)."""
    return _TOKEN_OR_NL.findall(_lower("\n".join(sents)))


def dot_sentence_tokens_flat(line):
    """`sentence_tokens_flat(split_sentences(line, "."))` in one pass, for a line without <t> tags,
    with "." (never a token: tokens are letters and digits) in place of its "\n" sentence breaks."""
    return _TOKEN_OR_DOT.findall(_lower(line))


def split_at_newlines(items, n, newline="\n"):
    """`items` cut into n lists at the n - 1 `newline` entries (see sentence_tokens_flat)."""
    out, start = [], 0
    for _ in range(n - 1):
        end = items.index(newline, start)
        out.append(items[start:end])
        start = end + 1
    out.append(items[start:])
    return out


def sentence_tokens(sents):
    """`tokens` of every sentence."""
    return split_at_newlines(sentence_tokens_flat(sents), len(sents)) if sents else []


def _lower(text):
    """A-Z -> a-z only. str.lower() would also map non-ASCII letters, some of them onto ASCII ones
    ("K" -> "k"); non-ASCII characters only separate tokens, so they become "?" first."""
    if not text.isascii():
        text = text.encode("ascii", "replace").decode("ascii")
    return text.lower()
