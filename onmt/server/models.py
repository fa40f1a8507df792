"""The models a server holds: upstream OpenNMT-py's conf.json read into ModelSpecs, each loaded once
as a Summarizer (onmt/api.py) and decoded through the path translate.py and the API share
(onmt/translate/session.py), so a line gets the words translate.py writes with the same options.

    {"models_root": "./available_models",
     "models": [{"id": 100, "model": "model_0.pt", "opt": {"beam_size": 5, "gpu": -1}}, ...]}

A model's "id" defaults to the first free number from the count of models before it (upstream's
rule); "model_root" overrides "models_root" for one model; a relative path is relative to the
current folder, as upstream's. Its "opt" holds translate.py's search
options (onmt/api.py SEARCH_OPTIONS: beam_size, n_best, max_length, replace_unk, batch_size, ...)
and "gpu", "precision", "detokenize". Upstream keys with no part here ("timeout", "on_timeout",
"load", "tokenizer", ...) are logged as ignored; an unknown key or option is refused in one line.
"""
import json
import os
from typing import Any, Dict, List, NamedTuple

from onmt.errors import UserError
from onmt.opts import OptionError

# upstream's per-model keys that change nothing here, and why
IGNORED_KEYS = {
    "timeout": "models stay loaded",
    "on_timeout": "models stay loaded",
    "load": "every model is loaded at start",
    "tokenizer": "the checkpoint's input rules tokenize (opt detokenize: readable text)",
    "preprocess": "the checkpoint's input rules prepare the text",
    "postprocess": "opt detokenize gives readable text",
    "custom_opt": "no custom options",
}
MODEL_KEYS = {"id", "model", "model_root", "opt", "name"}
# options of "opt" besides the search options: (Python type, default)
LOAD_OPTIONS = {"gpu": (int, -1), "precision": (str, "fp32"), "detokenize": (bool, False)}
IGNORED_OPTIONS = {"verbose", "seed", "report_time", "log_file", "models", "src", "output"}


class ModelSpec(NamedTuple):
    id: int
    path: str
    search: Dict[str, Any]     # translate.py's search options given
    load: Dict[str, Any]       # gpu, precision, detokenize
    notes: List[str]           # what was ignored, to log


def read_conf(path):
    """The ModelSpecs of upstream's conf.json at `path`, in order; UserError in one line naming the
    file and the model otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            conf = json.load(f)
    except json.JSONDecodeError as e:
        raise UserError(f"-config {path}: not valid JSON (line {e.lineno}, column {e.colno}: "
                        f"{e.msg})") from None
    except UnicodeDecodeError as e:
        raise UserError(f"-config {path}: not UTF-8 text (byte {e.start})") from None
    if not isinstance(conf, dict) or not isinstance(conf.get("models"), list) or not conf["models"]:
        raise UserError(f"-config {path}: expected upstream's conf.json, an object with a "
                        "non-empty \"models\" list")
    root = conf.get("models_root", "./available_models")
    if not isinstance(root, str):
        raise UserError(f"-config {path}: models_root must be a string")
    specs = []
    for i, entry in enumerate(conf["models"]):
        specs.append(_spec(entry, i, root, {s.id for s in specs}, path))
    return specs


def _spec(entry, i, root, taken, conf_path):
    where = f"-config {conf_path}: models[{i}]"
    if not isinstance(entry, dict):
        raise UserError(f"{where} must be an object")
    unknown = sorted(set(entry) - MODEL_KEYS - set(IGNORED_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)} "
                        f"(known: {', '.join(sorted(MODEL_KEYS | set(IGNORED_KEYS)))})")
    model = entry.get("model")
    if isinstance(model, list) and len(model) == 1:
        model = model[0]
    if not isinstance(model, str) or not model:
        raise UserError(f"{where}: \"model\" must be one checkpoint path")
    model_id = entry.get("id")
    if model_id is None:
        model_id = len(taken)
        while model_id in taken:
            model_id += 1
    if not isinstance(model_id, int) or isinstance(model_id, bool):
        raise UserError(f"{where}: \"id\" must be an integer, got {model_id!r}")
    if model_id in taken:
        raise UserError(f"{where}: model id {model_id} is given twice")
    model_root = entry.get("model_root", root)
    if not isinstance(model_root, str):
        raise UserError(f"{where}: model_root must be a string")
    search, load, notes = _options(entry.get("opt", {}), f"{where} (id {model_id})")
    notes += [f"model {model_id}: ignored {k!r} ({IGNORED_KEYS[k]})"
              for k in sorted(entry) if k in IGNORED_KEYS]
    # relative to the current folder, as upstream's (its conf.json sits in ./available_models)
    path = os.path.normpath(os.path.abspath(os.path.join(model_root, model)))
    return ModelSpec(model_id, path, search, load, notes)


def _options(opt, where):
    """(search options, load options, notes) of a model's "opt"; one UserError naming a bad one."""
    from onmt.api import SEARCH_OPTIONS, translate_options  # start-up time: onmt.api imports torch
    if not isinstance(opt, dict):
        raise UserError(f"{where}: \"opt\" must be an object")
    unknown = sorted(set(opt) - set(SEARCH_OPTIONS) - set(LOAD_OPTIONS) - IGNORED_OPTIONS)
    if unknown:
        raise UserError(f"{where}: unknown opt {', '.join(unknown)}; the options served are "
                        f"{', '.join(SEARCH_OPTIONS + tuple(LOAD_OPTIONS))}")
    load = {}
    for name, (kind, default) in LOAD_OPTIONS.items():
        value = opt.get(name, default)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise UserError(f"{where}: opt {name} must be {kind.__name__}, got {value!r}")
        load[name] = value
    search = {k: v for k, v in opt.items() if k in SEARCH_OPTIONS}
    try:
        translate_options(**search)
    except (TypeError, OptionError) as e:
        raise UserError(f"{where}: opt {e}") from None
    notes = [f"{where}: ignored opt {k}" for k in sorted(set(opt) & IGNORED_OPTIONS)]
    return search, load, notes


class ServedModel:
    """One model of the conf, loaded: `decode(lines)` -> per line its n_best (text, score) pairs,
    best first; what the batching queue calls, in its worker thread."""

    def __init__(self, spec, summarizer):
        from onmt.api import translate_options  # start-up time: onmt.api imports torch
        self.spec, self.summarizer = spec, summarizer
        search = dict(spec.search)
        if search.get("replace_unk") is None:
            search["replace_unk"] = spec.load["detokenize"]   # as translate.py -detokenize
        self.opt = translate_options(**search)
        session = summarizer.session
        self.write = session.readable() if spec.load["detokenize"] else " ".join
        self._logged = False

    @classmethod
    def load(cls, spec):
        from onmt.api import Summarizer  # start-up time: onmt.api imports torch
        if not os.path.exists(spec.path):
            raise UserError(f"model {spec.id}: no such checkpoint {spec.path}")
        gpu = spec.load["gpu"]
        # a server is a process of its own: it keeps freed memory for reuse, as translate.py does
        summarizer = Summarizer.load(spec.path, device=f"cuda:{gpu}" if gpu >= 0 else "cpu",
                                     precision=spec.load["precision"], reuse_freed_memory=True)
        return cls(spec, summarizer)

    @property
    def n_best(self):
        return self.opt.n_best

    @property
    def batch_size(self):
        return self.opt.batch_size

    def decode(self, lines):
        # looked up on its module when called: the tests replace it there
        from onmt.translate.session import translate_lines
        results = translate_lines(self.opt, self.summarizer.session, lines, show_progress=False,
                                  log_notes=not self._logged)
        self._logged = True
        return [[(self.write(t.tokens), float(t.score)) for t in nbest] for nbest in results]

    def describe(self):
        """Upstream's /models entry: {"model_id", "opt", "models", "loaded", "timeout"}."""
        return {"model_id": self.spec.id, "opt": dict(self.spec.search, **self.spec.load),
                "models": [self.spec.path], "loaded": True, "timeout": -1}
