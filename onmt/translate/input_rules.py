"""Test input = training input: the preprocessing a checkpoint records, applied to -src and -tgt.

A checkpoint carries `ckpt["preprocess"]` (onmt/inputters/vocab_builder.py INPUT_OPTIONS): whether
the data was lowercased, the source/target truncation and the source/target length limits. The
rules translate.py follows, each logged once:

- tokenizing: when the training text came from the prepare tools (`prepare.json`, carried as the
  record's "text"), -src and -tgt are tokenized with the same PTB-style tokenizer
  (onmt/prepare/tokenize.py) and lowercased as that text was; already tokenized input is unchanged
  (tokenizing twice changes nothing), so raw articles and prepared ones give the same predictions;
- lowercasing: -src and -tgt are lowercased when the training data was (-lower, or prepare's
  lowercasing); a lowercased vocabulary has no cased word to match, so this is not optional;
- digits: where the training text wrote every digit as # (Gigaword; the record's "digits": "#"),
  -src and -tgt get the same (`9.58` -> `#.##`): the vocabulary has no word with a digit;
- source truncation: -src lines are cut to the data's -src_seq_length_trunc (CNN/DM: 800 tokens);
  `-src_seq_length_trunc N` overrides it (0: no truncation). The source length *filter*
  (-src_seq_length) dropped training examples; test examples are never dropped, nor cut by it;
- target truncation: -tgt lines (gold scoring, GOLD PPL) are cut to the data's
  -tgt_seq_length_trunc, as validation targets were; `-tgt_seq_length_trunc N` overrides it.
  -report_rouge always scores against the -tgt file as written, never truncated;
- prediction length: without -max_length, predictions stop at the longest target the training
  data allowed: its -tgt_seq_length_trunc, else its -tgt_seq_length; a limit above
  NO_LIMIT_ABOVE tokens means the data had none, and the option's default (100) applies;
- n-gram blocking: without -block_ngram_repeat (or -avoid_trigram_repetition), the model family's
  test-time rule (onmt/opts/families.py Family.block_ngram_repeat: 3, no repeated trigram, for the
  reinforced model as in Paulus et al.; 0 for the others).
The options' rules (truncation, prediction length, n-gram blocking) are resolved with the other
options, by onmt/opts/update.py `resolve_translate_run` (the only reader of which options were
given); `resolve` here adds tokenizing, lowercasing and digit masking and collects the rules.
A checkpoint without the record (written before it existed) gets -src and -tgt as given.
"""
from typing import List, NamedTuple, Optional, Tuple

from onmt.inputters.vocab_builder import target_length_limit
from onmt.prepare.tokenize import ptb_tokenize


class InputRules(NamedTuple):
    lower: bool = False
    tokenize: bool = False            # PTB-style, as prepare tokenized the training text
    src_trunc: int = 0                # 0: no truncation
    tgt_trunc: int = 0
    max_length: int = 100
    block_ngram_repeat: int = 0
    mask_digits: bool = False         # every digit written #, as the training text (Gigaword)


def resolve(opt, preprocess: Optional[dict]) -> Tuple[InputRules, List[str]]:
    """The rules for translate options `opt` resolved for the checkpoint
    (opts.resolve_translate_run) and its preprocessing record (None for an older checkpoint); with
    one log line per rule it adds (tokenizing, lowercasing)."""
    notes = []
    if preprocess is None:
        notes.append("the checkpoint has no record of its preprocessing (an older checkpoint): "
                     "-src and -tgt are used as given, neither lowercased nor truncated")
        preprocess = {}
    text = preprocess.get("text") or {}
    tokenize = text.get("tokenize") == "ptb"
    if tokenize:
        notes.append("tokenizing -src and -tgt as prepare tokenized the training text (PTB-style; "
                     "tokenized input is unchanged)")
    lower = bool(preprocess.get("lower", False))
    if lower:
        notes.append("lowercasing -src and -tgt: the training data was preprocessed with -lower")
    elif text.get("lower"):
        lower = True
        notes.append("lowercasing -src and -tgt: prepare lowercased the training text")
    mask_digits = text.get("digits") == "#"
    if mask_digits:
        notes.append("writing the digits of -src and -tgt as #, as in the training text "
                     "(9.58 -> #.##)")
    return InputRules(lower, tokenize, opt.src_seq_length_trunc,
                      opt.tgt_seq_length_trunc if opt.tgt else 0, opt.max_length,
                      opt.block_ngram_repeat, mask_digits), notes


def data_target_limit(preprocess):
    """The longest training target of a checkpoint's preprocessing record
    (None: an older checkpoint): its truncation, else its length filter; 0 when none is recorded."""
    return target_length_limit(preprocess or {}, default=0)


def prepare_lines(lines, lower=False, trunc=0, tokenize=False, mask_digits=False):
    """Lines as the model saw training text: PTB-tokenized (`tokenize`), lowercased, every ASCII
    digit written # (`mask_digits`), cut to `trunc` whitespace tokens (0: not cut). Untouched lines
    are returned as they are (an empty line stays empty)."""
    if lines is None or (not lower and not trunc and not tokenize and not mask_digits):
        return lines
    if tokenize:
        lines = [" ".join(ptb_tokenize(line)) for line in lines]
    out = []
    for line in lines:
        if lower:
            line = line.lower()
        if mask_digits:
            line = line.translate(_DIGITS)
        if trunc:
            toks = line.split()
            if len(toks) > trunc:
                line = " ".join(toks[:trunc])
        out.append(line)
    return out


_DIGITS = str.maketrans("0123456789", "#" * 10)
