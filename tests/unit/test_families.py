"""onmt/opts/families.py: one profile per model family, the only home of a family's option knowledge;
-model_family and its aliases; and the house rules that keep the options in onmt/opts/ (who asks
which options were given, who writes them)."""
import argparse
import ast
import os
import re

import pytest

from helpers.models import train_opt
from onmt import opts
from onmt.errors import OptionError, UserError
from onmt.opts import families
from onmt.opts.families import FAMILIES, Family, Refusal, Requirement

ONMT = os.path.join(os.path.dirname(__file__), "..", "..", "onmt")


_model = train_opt


def _resolved(*argv):
    return opts.saved_options(_model(*argv))


# --------------------------------------------------------------------------- -model_family and its aliases
@pytest.mark.parametrize("alias, family", [(["-reinforced"], "reinforced"), (["-copy_attn"], "copy"),
                                           (["-reinforced", "-copy_attn"], "reinforced"), ([], "rnn")])
def test_an_alias_is_its_family(alias, family):
    assert _resolved(*alias) == _resolved("-model_family", family)
    assert _model(*alias).model_family == family
    more = ["-rnn_size", "64", "-dropout", "0.1"]
    assert _resolved(*alias, *more) == _resolved("-model_family", family, *more)


def test_the_family_sets_its_aliases():
    opt = _model("-model_family", "reinforced")
    assert opt.reinforced and opt.copy_attn and opt.share_embeddings
    assert (opt.optim, opt.batch_size, opt.rnn_size) == ("adam", 50, 400)   # the paper's recipe, both ways
    opt = _model("-model_family", "copy")
    assert opt.copy_attn and not opt.reinforced


@pytest.mark.parametrize("argv, alias, named", [
    (["-model_family", "rnn", "-copy_attn"], "-copy_attn", "copy"),
    (["-model_family", "rnn", "-reinforced"], "-reinforced", "reinforced"),
    (["-model_family", "copy", "-reinforced"], "-reinforced", "reinforced"),
])
def test_contradicting_choices_are_refused_in_one_line(argv, alias, named):
    with pytest.raises(OptionError) as e:
        _model(*argv)
    message = str(e.value)
    assert "\n" not in message and message == (f"-model_family {argv[1]} contradicts {alias} "
                                               f"({alias} is -model_family {named})")


def test_model_family_is_not_upstreams_model_type():
    help_text = opts.train_parser().format_help()
    assert "-model_family" in help_text and "Not OpenNMT-py's -model_type" in " ".join(help_text.split())
    assert "the model family is -model_family" in opts.unknown_option_message("-model_type", {})


def test_checkpoints_before_model_family_are_their_family():
    """A checkpoint's options written before -model_family: its -reinforced and -copy_attn say the family."""
    for saved, family in (({"reinforced": True, "copy_attn": True}, "reinforced"),
                          ({"reinforced": False, "copy_attn": True}, "copy"),
                          ({"reinforced": False, "copy_attn": False}, "rnn")):
        opt = argparse.Namespace(**saved)
        opts.update_saved_model_opts(opt)
        assert opt.model_family == family
        assert families.family_name(saved) == family


def test_a_resume_keeps_the_checkpoints_family():
    saved = _resolved("-reinforced")
    del saved["model_family"]   # a checkpoint from before the option
    for argv in (["-model_family", "copy"], ["-copy_attn", "-model_family", "copy"]):
        opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", "-train_from", "c.pt", *argv])
        opts.update_train_opts(opt)
        with pytest.raises(UserError, match=r"-model_family copy \(the checkpoint's: reinforced\)"):
            opts.resolve_train_run(opt, saved)
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", "-train_from", "c.pt", "-rl_gamma", "0.5"])
    opts.update_train_opts(opt)
    run, _ = opts.resolve_train_run(opt, saved)
    assert run.model_family == "reinforced" and run.valid_rouge is True and opt.model_family is None
    opts.validate_train_run(run)


# --------------------------------------------------------------------------- the profile is the one place
def test_every_family_has_a_registry_entry_holding_its_profile():
    from onmt.model_builder import MODEL_REGISTRY
    assert list(MODEL_REGISTRY) == list(FAMILIES)
    for name, entry in MODEL_REGISTRY.items():
        assert entry.profile is FAMILIES[name] and entry.name == name
    assert MODEL_REGISTRY["reinforced"].profile.block_ngram_repeat == 3
    assert MODEL_REGISTRY["copy"].profile.needs_dynamic_dict


@pytest.fixture
def fake_family(monkeypatch):
    """A family added in one place: its profile. Nothing else is edited."""
    fake = Family("fake", "-model_family fake (a test's model)", "a test's family",
                  implies={"share_embeddings": True}, recipe={"rnn_size": 64, "layers": 3},
                  train_recipe={"batch_size": 7},
                  refuses=(Refusal("rnn_type", lambda v: v == "GRU", "it is an LSTM"),),
                  only=("bridge",),
                  requires=(Requirement(lambda o: o.dropout < 0.5, lambda o: f"-dropout {o.dropout}: too much"),),
                  paper={"rnn_size": 64}, paper_name="the test's paper", block_ngram_repeat=2)
    monkeypatch.setitem(FAMILIES, "fake", fake)
    return fake


def test_a_family_added_in_its_profile_is_resolved_and_checked_by_its_tables(fake_family):
    opt = _model("-model_family", "fake")
    assert (opt.share_embeddings, opt.rnn_size, opt.enc_layers, opt.batch_size) == (True, 64, 3, 7)
    assert _model("-model_family", "fake", "-layers", "1", "-rnn_size", "32").enc_layers == 1
    assert _model("-model_family", "fake", "-bridge").bridge   # only it reads -bridge
    with pytest.raises(OptionError, match=r"^-bridge only applies to -model_family fake$"):
        _model("-bridge")
    with pytest.raises(OptionError, match=re.escape("-model_family fake (a test's model) cannot honour -rnn_type "
                                                    "GRU (-rnn_type: it is an LSTM)")):
        _model("-model_family", "fake", "-rnn_type", "GRU")
    with pytest.raises(OptionError, match="-dropout 0.7: too much"):
        _model("-model_family", "fake", "-dropout", "0.7")
    with pytest.raises(OptionError, match="-scheduled_sampling only applies to -reinforced"):
        _model("-model_family", "fake", "-scheduled_sampling", "0.1")
    assert opts.paper_differences(_model("-model_family", "fake", "-rnn_size", "32")) == ["-rnn_size 32 (paper: 64)"]
    assert opts.paper_note(_model("-model_family", "fake", "-rnn_size", "32")).startswith(
        "Settings that differ from the test's paper: ")
    # its test-time default: translate.py's n-gram blocking
    t = opts.parse_with_given(opts.translate_parser(), ["-model", "m", "-src", "s"])
    opts.update_translate_opts(t)
    run, notes = opts.resolve_translate_run(t, argparse.Namespace(model_family="fake"), None, 0)
    assert run.block_ngram_repeat == 2 and t.block_ngram_repeat == 0 and "the fake model's test-time rule" in notes[-1]


def test_the_reinforced_refusals_come_from_its_profile(monkeypatch):
    reinforced = FAMILIES["reinforced"]
    with pytest.raises(OptionError, match="-bridge True"):
        _model("-reinforced", "-bridge")
    monkeypatch.setitem(FAMILIES, "reinforced", reinforced._replace(
        refuses=tuple(r for r in reinforced.refuses if r.option != "bridge")))
    assert _model("-reinforced", "-bridge").bridge   # the table, not code elsewhere, refused it


# --------------------------------------------------------------------------- the options stay in onmt/opts/
def _sources(*parts):
    root = os.path.join(ONMT, *parts)
    if root.endswith(".py"):
        yield root
        return
    for folder, _, names in os.walk(root):
        yield from (os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))


def test_which_options_were_given_is_asked_only_in_onmt_opts():
    for path in _sources():
        if os.sep + "opts" + os.sep in path:
            continue
        text = open(path, encoding="utf-8").read()
        assert not re.search(r"\bgiven\(", text), path
        assert not re.search(r"\._given\b|[\"']_given[\"']", text), path   # nor the bookkeeping behind it


def test_the_aliases_are_read_only_by_the_family_resolution():
    for path in _sources():
        if path.endswith(os.path.join("opts", "families.py")) or path.endswith(os.path.join("opts", "validate.py")):
            continue
        text = open(path, encoding="utf-8").read()
        assert not re.search(r"\bopt\.reinforced\b", text), path
        if os.sep + "opts" + os.sep not in path:
            assert not re.search(r"\bopt\.copy_attn\b", text), path


def test_utils_does_not_import_opts():
    for path in _sources("utils"):
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "onmt.opts" or n.startswith("onmt.opts.") for n in names), path


def _writes_to_opt(path):
    """(line, text) of each assignment to an attribute of a name ending in `opt`, and of setattr(opt, ...)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    out = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id.endswith("opt"):
                    out.append((node.lineno, ast.unparse(node)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and \
                isinstance(node.args[0], ast.Name) and node.args[0].id.endswith("opt"):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_nothing_writes_the_options_after_validation():
    """Only the update step (onmt/opts/update.py) writes options; the entry points, the translation
    path and the API read the namespaces it makes."""
    for path in [*_sources("bin"), *_sources("translate"), *_sources("api.py")]:
        assert _writes_to_opt(path) == [], path
