"""Enough of PNG to count the colours of a browser's screenshot (8-bit RGB or RGBA, not
interlaced: what Chromium writes), so that a test can tell a drawn canvas from a blank one."""

from __future__ import annotations

import struct
import zlib

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A PNG of one pixel, in base64 (as an image's `data` in MCP content or a `data:` URL).
ONE_PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def pixels(png: bytes) -> list[bytes]:
    """Each pixel's bytes, row by row."""
    assert png.startswith(_SIGNATURE), "not a PNG"
    at, data, width, height, channels = len(_SIGNATURE), b"", 0, 0, 0
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace != 0:
                raise ValueError("not an 8-bit, non-interlaced RGB or RGBA PNG")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += body
    raw = zlib.decompress(data)
    stride = width * channels
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + left) & 0xFF
            elif kind == 2:
                row[i] = (row[i] + up) & 0xFF
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                guess = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                row[i] = (row[i] + guess) & 0xFF
        rows.append(row)
        previous = row
    return [bytes(row[i : i + channels]) for row in rows for i in range(0, stride, channels)]


def colours(png: bytes) -> int:
    """How many distinct colours the image has."""
    return len(set(pixels(png)))
