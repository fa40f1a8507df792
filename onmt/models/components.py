"""The component tables: the encoders and decoders a model's `from_opt` builds, by name, each as a
plain class and (where it has one) its fused subclass.

    ENCODERS[name] = cls          the plain class: cls.from_opt(opt, embeddings, **fixed)
    FUSED_ENCODERS[name] = cls    its fused subclass: the same, with execution=... among `fixed`
    DECODERS, FUSED_DECODERS      the same for decoders

A class joins its table with `@register_encoder(name)` / `@register_decoder(name)` where it is
defined (RNNEncoder and RNNDecoder as "rnn", ReinforcedDecoder as "reinforced"), a fused subclass
with `fused=True` (onmt/models/fused.py, onmt/reinforced/fused.py); importing onmt.models (or
onmt.reinforced) imports those modules, so the tables are full before a model is built. A model's
`from_opt` asks `build_encoder(model.ENCODER, ...)` and `build_decoder(model.DECODER, ...)`, never a
class by name: a new encoder (a Transformer, say) is one class registered here and the name a model
family builds; a component without a fused subclass is built plain under either execution.

`build_encoder` / `build_decoder` pick the class from the Execution, once, as the model registry
(onmt/model_builder.py) picks the model class; compile "decoder-step" (train.py -compile) puts the
decoder's `step` through torch.compile (execution.compile_step) as it is built.
"""
from onmt.execution import as_execution, compile_step

ENCODERS, FUSED_ENCODERS = {}, {}
DECODERS, FUSED_DECODERS = {}, {}


def register_encoder(name, fused=False):
    """Class decorator: put the class into ENCODERS (FUSED_ENCODERS with `fused`) under `name`."""
    return _register(FUSED_ENCODERS if fused else ENCODERS, "encoder", name)


def register_decoder(name, fused=False):
    """Class decorator: put the class into DECODERS (FUSED_DECODERS with `fused`) under `name`."""
    return _register(FUSED_DECODERS if fused else DECODERS, "decoder", name)


def _register(table, what, name):
    def add(cls):
        known = table.get(name, cls)
        if (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"two {what}s named {name!r}: {table[name].__name__} and "
                             f"{cls.__name__}")
        table[name] = cls
        return cls
    return add


def component_class(name, what, execution=None):
    """The class of the encoder / decoder (`what`) `name` for `execution`: its fused subclass when
    the execution is fused and one is registered, else the plain class."""
    plain, fused = (ENCODERS, FUSED_ENCODERS) if what == "encoder" else (DECODERS, FUSED_DECODERS)
    if name not in plain:
        raise ValueError(f"unknown {what} {name!r}; registered: {', '.join(sorted(plain))}")
    return fused.get(name, plain[name]) if as_execution(execution).fused else plain[name]


def build_encoder(name, opt, embeddings, execution=None, **fixed):
    """The encoder `name` of the model options `opt` over `embeddings`, plain or fused by
    `execution`; `fixed`: constructor arguments the model decides, not the options."""
    return _build(component_class(name, "encoder", execution), opt, embeddings, execution, fixed)


def build_decoder(name, opt, embeddings, execution=None, **fixed):
    """The decoder `name` of the model options `opt` over `embeddings` (as build_encoder), its
    step compiled under compile "decoder-step"."""
    decoder = _build(component_class(name, "decoder", execution), opt, embeddings, execution, fixed)
    if as_execution(execution).compile == "decoder-step":
        compile_step(decoder)
    return decoder


def _build(cls, opt, embeddings, execution, fixed):
    if cls in FUSED_ENCODERS.values() or cls in FUSED_DECODERS.values():
        fixed = dict(fixed, execution=as_execution(execution))   # a fused class keeps it
    return cls.from_opt(opt, embeddings, **fixed)
