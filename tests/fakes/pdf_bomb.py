"""PDFs that cost far more to read than their size: every page shares one content stream,
compressed (a few KB on disk) and decoded again for each page. `page_bomb(pages, ops, width)`:
each page shows `ops` strings of `width` characters (Helvetica)."""

from __future__ import annotations

import io
import zlib

from pypdf import PdfWriter
from pypdf.generic import DictionaryObject, NameObject, StreamObject


def page_bomb(pages: int, ops: int, width: int = 1) -> bytes:
    writer = PdfWriter()
    content = b"BT /F1 1 Tf " + (b"(" + b"x" * width + b") Tj ") * ops + b"ET"
    stream = StreamObject()
    stream.set_data(zlib.compress(content, 9))
    stream[NameObject("/Filter")] = NameObject("/FlateDecode")
    shared = writer._add_object(stream)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
    resources = writer._add_object(DictionaryObject({NameObject("/Font"): fonts}))
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = shared
        page[NameObject("/Resources")] = resources
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
