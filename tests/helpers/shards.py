"""Reading one example back out of a numericalized chunk or a shard, for comparisons with references."""
from onmt.inputters.numericalize import oov_lists


def example_fields(d, i, dynamic_dict=True):
    """Example i of `d` (numpy arrays or tensors with offsets, see numericalize.py) as the lists that
    `Numericalizer.numericalize` returns: src, tgt, and with the dynamic dictionary src_ex, tgt_ex, oov
    (whose length must agree with oov_offsets)."""
    so, to = d["src_offsets"], d["tgt_offsets"]
    out = {"src": d["src"][so[i]:so[i + 1]].tolist(), "tgt": d["tgt"][to[i]:to[i + 1]].tolist()}
    if dynamic_dict:
        out["src_ex"] = d["src_ex"][so[i]:so[i + 1]].tolist()
        out["tgt_ex"] = d["tgt_ex"][to[i]:to[i + 1]].tolist()
        out["oov"] = oov_lists(d["oov_bytes"], d["oov_byte_offsets"], [i])[0]
        oo = d["oov_offsets"]
        assert int(oo[i + 1] - oo[i]) == len(out["oov"])
    return out
