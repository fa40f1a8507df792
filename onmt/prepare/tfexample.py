"""See et al.'s `.bin` files without TensorFlow or protobuf: the record framing and a minimal
protocol-buffer wire-format decoder for tf.Example.

A file is a sequence of records, each an 8-byte little-endian length N followed by N bytes of a
serialized tf.Example (no checksums: this is not the TFRecord format). The messages decoded:

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }
              # repeated entries { string key = 1; Feature value = 2; }
    Feature   { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
                        Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed]; }
    Int64List { repeated int64 value = 1 [packed]; }
"""
import struct

from onmt.errors import UserError
from onmt.prepare.text import open_binary

MAX_RECORD = 1 << 31


class DecodeError(ValueError):
    """Bytes that are not a well-formed message of the expected type."""


def _varint(buf, pos):
    """(value, next position) of the base-128 varint at buf[pos]."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def fields(buf):
    """Yield (field number, wire type, value) of a message: value is an int for varints, bytes for
    the other wire types (fixed64, length-delimited, fixed32)."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise DecodeError(f"unsupported wire type {wire}")
        if pos > end:
            raise DecodeError("truncated field")
        yield number, wire, value


def _signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _feature(buf):
    """A Feature -> list of bytes, floats or ints (empty list for an empty Feature)."""
    for number, wire, value in fields(buf):
        if wire != 2:
            continue
        if number == 1:
            return [v for n, w, v in fields(value) if n == 1 and w == 2]
        if number == 2:
            out = []
            for n, w, v in fields(value):
                if n == 1 and w == 2:                       # packed
                    out.extend(struct.unpack(f"<{len(v) // 4}f", v[:len(v) // 4 * 4]))
                elif n == 1 and w == 5:
                    out.append(struct.unpack("<f", v)[0])
            return out
        if number == 3:
            out = []
            for n, w, v in fields(value):
                if n == 1 and w == 2:                       # packed
                    pos = 0
                    while pos < len(v):
                        x, pos = _varint(v, pos)
                        out.append(_signed64(x))
                elif n == 1 and w == 0:
                    out.append(_signed64(v))
            return out
    return []


def parse_example(buf):
    """Serialized tf.Example -> {feature name: list of values} (bytes values stay bytes)."""
    out = {}
    for number, wire, features in fields(buf):
        if number != 1 or wire != 2:
            continue
        for n, w, entry in fields(features):
            if n != 1 or w != 2:
                continue
            key, value = None, b""
            for en, ew, ev in fields(entry):
                if en == 1 and ew == 2:
                    key = ev.decode("utf-8")
                elif en == 2 and ew == 2:
                    value = ev
            if key is not None:
                out[key] = _feature(value)
    return out


def read_records(path):
    """Yield the payload bytes of each length-prefixed record of a See et al. .bin file."""
    with open_binary(path) as f:
        n = 0
        while True:
            head = f.read(8)
            if not head:
                return
            n += 1
            if len(head) < 8:
                raise UserError(f"{path}: record {n} is truncated (a partial length header)")
            size = struct.unpack("<q", head)[0]
            if not 0 <= size < MAX_RECORD:
                raise UserError(f"{path}: record {n} has an impossible length {size}: "
                                "not a See et al. .bin file")
            data = f.read(size)
            if len(data) < size:
                raise UserError(f"{path}: record {n} is truncated ({len(data)} of {size} bytes)")
            yield data


def read_text_features(path, names):
    """Yield, per record of a .bin file, the tuple of the named bytes features decoded as UTF-8 text
    (several values of one feature joined by a space)."""
    for n, rec in enumerate(read_records(path), 1):
        try:
            ex = parse_example(rec)
            row = []
            for name in names:
                if name not in ex:
                    raise UserError(f"{path}: record {n} has no feature '{name}' "
                                    f"(it has: {', '.join(sorted(ex))})")
                row.append(" ".join(v.decode("utf-8") for v in ex[name] if isinstance(v, bytes)))
        except (DecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{path}: record {n} is not a tf.Example with text features "
                            f"({e})") from None
        yield tuple(row)
