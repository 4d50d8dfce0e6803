"""A tiny RGB canvas that writes PNG with the standard library alone.

The doctor must not import numpy or matplotlib (they are part of what it diagnoses), yet a report
needs a picture of memory over time: lines, rectangles and a 3×5 pixel font are all it takes.
"""

from __future__ import annotations

import struct
import zlib
from typing import Tuple

Color = Tuple[int, int, int]

# Each glyph: five rows of three pixels, '#' lit. Text is drawn upper-case.
FONT = {
    "0": "### #.# #.# #.# ###", "1": ".#. ##. .#. .#. ###", "2": "### ..# ### #.. ###",
    "3": "### ..# ### ..# ###", "4": "#.# #.# ### ..# ..#", "5": "### #.. ### ..# ###",
    "6": "### #.. ### #.# ###", "7": "### ..# ..# ..# ..#", "8": "### #.# ### #.# ###",
    "9": "### #.# ### ..# ###", ".": "... ... ... ... .#.", "-": "... ... ### ... ...",
    "A": ".#. #.# ### #.# #.#", "B": "##. #.# ##. #.# ##.", "C": "### #.. #.. #.. ###",
    "D": "##. #.# #.# #.# ##.", "E": "### #.. ##. #.. ###", "F": "### #.. ##. #.. #..",
    "G": "### #.. #.# #.# ###", "H": "#.# #.# ### #.# #.#", "I": "### .#. .#. .#. ###",
    "K": "#.# #.# ##. #.# #.#", "L": "#.. #.. #.. #.. ###", "M": "#.# ### ### #.# #.#",
    "N": "##. #.# #.# #.# #.#", "O": "### #.# #.# #.# ###", "P": "### #.# ### #.. #..",
    "R": "##. #.# ##. #.# #.#", "S": "### #.. ### ..# ###", "T": "### .#. .#. .#. .#.",
    "U": "#.# #.# #.# #.# ###", "V": "#.# #.# #.# #.# .#.", "Y": "#.# #.# .#. .#. .#.",
    "(": ".#. #.. #.. #.. .#.", ")": ".#. ..# ..# ..# .#.", "/": "..# ..# .#. #.. #..",
    "%": "#.. ..# .#. #.. ..#", ":": "... .#. ... .#. ...",
}


class Canvas:
    def __init__(self, width: int, height: int, background: Color = (255, 255, 255)):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def dot(self, x: int, y: int, color: Color) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            at = 3 * (y * self.width + x)
            self.pixels[at : at + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        for y in range(max(0, y0), min(self.height, y1 + 1)):
            for x in range(max(0, x0), min(self.width, x1 + 1)):
                self.dot(x, y, color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: Color, width: int = 2, dash: int = 0) -> None:
        """Bresenham's line, `width` pixels thick; `dash` > 0 draws dashes of that length."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error, step = dx + dy, 0
        while True:
            if not dash or (step // dash) % 2 == 0:
                self.rect(x0, y0, x0 + width - 1, y0 + width - 1, color)
            if x0 == x1 and y0 == y1:
                return
            doubled, step = 2 * error, step + 1
            if doubled >= dy:
                error, x0 = error + dy, x0 + sx
            if doubled <= dx:
                error, y0 = error + dx, y0 + sy

    def text(self, x: int, y: int, text: str, color: Color, scale: int = 2) -> int:
        """Draw `text` with its top-left at (x, y); returns the x after it."""
        for char in text.upper():
            rows = FONT.get(char, "... ... ... ... ...").split()
            for row, bits in enumerate(rows):
                for column, bit in enumerate(bits):
                    if bit == "#":
                        self.rect(x + column * scale, y + row * scale, x + (column + 1) * scale - 1, y + (row + 1) * scale - 1, color)
            x += 4 * scale
        return x

    def png(self) -> bytes:
        rows = b"".join(b"\x00" + bytes(self.pixels[3 * self.width * y : 3 * self.width * (y + 1)]) for y in range(self.height))
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def text_width(text: str, scale: int = 2) -> int:
    return 4 * scale * len(text)
