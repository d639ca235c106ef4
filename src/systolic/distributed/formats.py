"""Shard files: Parquet (the default), npz, and a TestFloat-like text form. Writers produce identical bytes for
identical vectors (no timestamps, fixed compression settings), so a campaign's files do not depend on how many
workers made them.

Every format holds the same columns: ``index`` (the vector's number in the campaign, uint64) and the register
images ``c``, ``a``, ``b``, ``d`` (little-endian bytes; what each image is: :mod:`systolic.distributed.kinds`),
plus the shard's metadata (engine, instruction, types, model, profile, seed pair, systolic version) as JSON.

* **parquet** (pyarrow): one row per vector; ``index`` uint64, the images as ``fixed_size_binary`` columns;
  the metadata under the schema key ``systolic``. Compression zstd.
* **npz**: arrays ``index`` (V,), ``c``/``a``/``b``/``d`` (V, bytes) uint8 and ``meta`` (uint8: the JSON text in
  UTF-8); a zip with fixed member dates (``numpy.load`` reads it).
* **text**: ``#`` lines hold the metadata (``# meta {json}``) and the column legend; then one vector per line:
  ``INDEX C A B D``, INDEX in decimal, each image as its little-endian 32-bit words in order, each word as 8 hex
  digits, most significant first (a $readmemh-style word stream: a 16-bit element j sits in bits
  16*(j % 2) .. of word j // 2, an 8-bit element in bits 8*(j % 4) ..). Images are whole words (AMX tiles and
  DPAS operands are).
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from ..errors import InvalidValue
from .kinds import IMAGES

__all__ = ["FORMATS", "EXTENSIONS", "encode", "decode"]

FORMATS = ("parquet", "npz", "text")
EXTENSIONS = {"parquet": "parquet", "npz": "npz", "text": "txt"}
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _check_format(fmt: str) -> None:
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise InvalidValue(f"unknown shard format {fmt!r}", rule="formats: " + ", ".join(FORMATS), values={"format": fmt})


def encode(fmt: str, cols: dict[str, np.ndarray], meta: dict) -> bytes:
    """The bytes of one shard file."""
    _check_format(fmt)
    meta_text = json.dumps(meta, sort_keys=True, separators=(",", ":"))
    if fmt == "parquet":
        return _parquet(cols, meta_text)
    if fmt == "npz":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            arrays = {"index": cols["index"], **{k: cols[k] for k in IMAGES},
                      "meta": np.frombuffer(meta_text.encode(), np.uint8)}
            for name, arr in arrays.items():
                info = zipfile.ZipInfo(name + ".npy", date_time=_ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                part = io.BytesIO()
                np.lib.format.write_array(part, np.ascontiguousarray(arr), allow_pickle=False)
                z.writestr(info, part.getvalue())
        return buf.getvalue()
    lines = ["# systolic test vectors, text form 1 (docs/distributed.md)",
             "# columns: INDEX C A B D; images as little-endian 32-bit words, 8 hex digits each, word 0 first",
             "# meta " + meta_text]
    words = {k: np.ascontiguousarray(cols[k]).view("<u4") for k in IMAGES}
    for k in IMAGES:
        if cols[k].shape[1] % 4:
            raise InvalidValue("text form needs images of whole 32-bit words", values={"image": k,
                               "bytes": int(cols[k].shape[1])})
    for v in range(cols["index"].shape[0]):
        fields = [str(int(cols["index"][v]))] + ["".join(f"{w:08X}" for w in words[k][v].tolist()) for k in IMAGES]
        lines.append(" ".join(fields))
    return ("\n".join(lines) + "\n").encode("ascii")


def _parquet(cols, meta_text: str) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = int(cols["index"].shape[0])
    arrays = [pa.array(cols["index"].astype(np.uint64), type=pa.uint64())]
    names = ["index"]
    for k in IMAGES:
        img = np.ascontiguousarray(cols[k], dtype=np.uint8)
        width = int(img.shape[1])
        arrays.append(pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(img.tobytes())]))
        names.append(k)
    table = pa.Table.from_arrays(arrays, names=names).replace_schema_metadata({"systolic": meta_text})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", use_dictionary=False, write_statistics=False)
    return sink.getvalue().to_pybytes()


def decode(fmt: str, data: bytes) -> tuple[dict[str, np.ndarray], dict]:
    """Columns and metadata of a shard file's bytes; :class:`InvalidValue` when they do not parse."""
    _check_format(fmt)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidValue("a shard file's content is bytes", rule="decode(format, data: bytes)",
                           values={"data": type(data).__name__})
    try:
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq
            table = pq.read_table(pa.BufferReader(data))
            meta = json.loads(table.schema.metadata[b"systolic"])
            cols = {"index": table.column("index").to_numpy().astype(np.uint64)}
            for k in IMAGES:
                col = table.column(k).combine_chunks()
                width = col.type.byte_width
                buf = np.frombuffer(col.buffers()[1], np.uint8)[col.offset * width:(col.offset + len(col)) * width]
                cols[k] = buf.reshape(len(col), width).copy()
            return cols, meta
        if fmt == "npz":
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                cols = {k: z[k] for k in ("index",) + IMAGES}
                meta = json.loads(bytes(z["meta"]).decode())
            return cols, meta
        text = data.decode("ascii")
        meta, rows = None, []
        for line in text.splitlines():
            if line.startswith("# meta "):
                meta = json.loads(line[7:])
            elif line and not line.startswith("#"):
                rows.append(line.split(" "))
        if meta is None:
            raise ValueError("no '# meta' line")
        nb = meta["bytes"]
        cols = {"index": np.array([int(r[0]) for r in rows], dtype=np.uint64)}
        for j, k in enumerate(IMAGES, start=1):
            arr = np.zeros((len(rows), nb[k]), np.uint8)
            for v, r in enumerate(rows):
                hexs = r[j]
                if len(hexs) != 2 * nb[k]:
                    raise ValueError(f"row {v} image {k}: {len(hexs)} hex digits, {2 * nb[k]} expected")
                w = np.array([int(hexs[i:i + 8], 16) for i in range(0, len(hexs), 8)], dtype="<u4")
                arr[v] = w.view(np.uint8)
            cols[k] = arr
        return cols, meta
    except InvalidValue:
        raise
    except Exception as exc:                      # a truncated or foreign file: typed, with the parser's reason
        raise InvalidValue(f"shard does not parse as {fmt}: {exc}", rule=f"shard files are {fmt} as written by "
                           "systolic vectors generate", values={"format": fmt, "bytes": len(data)}) from exc
