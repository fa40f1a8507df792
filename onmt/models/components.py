"""The component tables: the encoders and decoders a model's `from_opt` builds, by name.

    ENCODERS[name] = cls    cls.from_opt(opt, embeddings, execution=None, **fixed) -> an encoder
                            (forward(src, lengths) -> EncoderOutput, onmt/interface.py)
    DECODERS[name] = cls    cls.from_opt(opt, embeddings, execution=None, **fixed) -> a decoder

A class joins its table with `@register_encoder(name)` / `@register_decoder(name)` where it is
defined (RNNEncoder and RNNDecoder as "rnn", ReinforcedDecoder as "reinforced"); importing
onmt.models (or onmt.reinforced) imports those modules, so the tables are full before a model is
built. A model's `from_opt` asks `build_encoder(model.ENCODER, ...)` and
`build_decoder(model.DECODER, ...)`, never a class by name: a new encoder (a Transformer, say) is
one class registered here and the name a model family builds.
"""
ENCODERS = {}
DECODERS = {}


def register_encoder(name):
    """Class decorator: put the class into ENCODERS under `name`."""
    return _register(ENCODERS, "encoder", name)


def register_decoder(name):
    """Class decorator: put the class into DECODERS under `name`."""
    return _register(DECODERS, "decoder", name)


def _register(table, what, name):
    def add(cls):
        known = table.get(name, cls)
        if (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"two {what}s named {name!r}: {table[name].__name__} and "
                             f"{cls.__name__}")
        table[name] = cls
        return cls
    return add


def build_encoder(name, opt, embeddings, execution=None, **fixed):
    """The encoder `name` of the model options `opt` over `embeddings`; `fixed`: constructor
    arguments the model decides, not the options."""
    return _entry(ENCODERS, "encoder", name).from_opt(opt, embeddings, execution=execution, **fixed)


def build_decoder(name, opt, embeddings, execution=None, **fixed):
    """The decoder `name` of the model options `opt` over `embeddings` (as build_encoder)."""
    return _entry(DECODERS, "decoder", name).from_opt(opt, embeddings, execution=execution, **fixed)


def _entry(table, what, name):
    if name not in table:
        raise ValueError(f"unknown {what} {name!r}; registered: {', '.join(sorted(table))}")
    return table[name]
