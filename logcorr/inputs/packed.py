"""Compressions and archives, known by their first bytes (their formats' magic numbers, never a
file's name), and the streaming decompressors ``paths.unpack`` and ``archives.unpack`` read them with.

Magic numbers: gzip RFC 1952 (``1f 8b``), xz (``fd 37 7a 58 5a 00``), bzip2 (``BZh`` then the block
size digit and a block or end-of-stream magic, ``31 41 59 26 53 59`` / ``17 72 45 38 50 90``), zstd
RFC 8878 (``28 b5 2f fd``), zip APPNOTE 4.3 (``PK 03 04``, an empty one ``PK 05 06``), POSIX tar
(``ustar`` at byte 257), 7z (``37 7a bc af 27 1c``), lz4 frame (``04 22 4d 18``).
"""

from __future__ import annotations

import bz2
import lzma
import re
import tarfile
import zlib

COMPRESSED = ("gz", "xz", "bz2", "zst")  # one stream of bytes packed: unpacked, then sniffed again
ARCHIVES = ("tar", "zip")  # many files: unpacked into a folder (``archives.unpack``)
REFUSED = ("7z", "lz4")  # recognised, not read: no decompressor in Python's standard library
MAGIC = {
    "xz": b"\xfd7zXZ\x00",
    "gz": b"\x1f\x8b",
    "zst": b"\x28\xb5\x2f\xfd",
    "zip": b"PK\x03\x04",
    "7z": b"7z\xbc\xaf\x27\x1c",
    "lz4": b"\x04\x22\x4d\x18",
}
_BZ2 = re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")
_EMPTY_ZIP = b"PK\x05\x06"
_TAR = (257, b"ustar")  # POSIX and GNU tar headers
# zstd input is fed in steps this small: its RLE blocks make up to 128 KiB of 4 bytes, so one step
# makes at most a few MiB whatever the data (zstandard's decompressobj has no output bound)
_ZST_STEP = 128


class Damaged(Exception):
    """The packed data is damaged (any decompressor's own error, one type for all)."""


class MissingModule(Exception):
    """The Python module a format needs is not installed; the message names it and what to do."""


def kind(head: bytes) -> str | None:
    """The compression or archive ``head`` (a file's first bytes, 512 at least for tar) opens with:
    one of ``COMPRESSED``, ``ARCHIVES`` or ``REFUSED``; None for anything else. The magic alone is not
    enough where text can hold it: a tar header's checksum must hold, and a head that is UTF-8 text and
    does not unpack is text (packed data is binary: a log line may begin ``BZh91AY&SY``)."""
    fmt = next((f for f, magic in MAGIC.items() if head.startswith(magic)), None)
    if fmt is None and _BZ2.match(head):
        fmt = "bz2"
    if fmt is None and head.startswith(_EMPTY_ZIP):
        fmt = "zip"
    if fmt is None and head[_TAR[0] : _TAR[0] + len(_TAR[1])] == _TAR[1]:
        fmt = "tar" if _tar_header(head) else None
    if fmt in COMPRESSED and _text(head) and not _unpacks(head, fmt):
        return None  # a log whose first line is "BZh91AY&SY": packed data is no UTF-8 text
    return fmt


def _tar_header(head: bytes) -> bool:
    """True when ``head`` opens with a tar header whose checksum holds."""
    try:
        tarfile.TarInfo.frombuf(head[:512], "utf-8", "surrogateescape")
    except (tarfile.HeaderError, ValueError):
        return False
    return True


def _text(head: bytes) -> bool:
    """True when the first 4 KiB of ``head`` are UTF-8 text (a character cut at their end aside)."""
    text = head[:4096].decode("utf-8", errors="replace")[:-1]
    return "\ufffd" not in text and "\0" not in text


def _unpacks(head: bytes, fmt: str) -> bool:
    """True when the first bytes of ``head`` unpack as ``fmt`` without an error (or its module is missing)."""
    try:
        decompressor(fmt).decompress(head, 4096)
    except Damaged:
        return False
    except MissingModule:
        return True
    return True


def decompressor(fmt: str):
    """A new decompressor of ``fmt`` (one of ``COMPRESSED``) with ``lzma.LZMADecompressor``'s interface:
    ``decompress(data, max_length)``, ``eof``, ``needs_input``, ``unused_data``; its errors are
    ``Damaged``. Raises ``MissingModule`` for ``zst`` when the ``zstandard`` module is not installed."""
    if fmt == "gz":
        return _Checked(zlib.decompressobj(31))  # 31: a gzip header
    if fmt == "xz":
        return _Checked(lzma.LZMADecompressor())
    if fmt == "bz2":
        return _Checked(bz2.BZ2Decompressor())
    if fmt == "zst":
        return _Zstd()
    raise ValueError(f"no decompressor for {fmt}")


def zstandard():
    """The ``zstandard`` module; raises ``MissingModule`` when it is not installed."""
    try:
        import zstandard as zstd
    except ImportError:
        raise MissingModule(
            "Python's zstandard module is not installed (pip install zstandard, or unpack it with "
            "zstd -d and name the file)"
        ) from None
    return zstd


class _Checked:
    """A stdlib decompressor whose errors (``zlib.error``, ``LZMAError``, bz2's ``OSError``) are ``Damaged``."""

    def __init__(self, d):
        self._d = d

    def __getattr__(self, name):
        return getattr(self._d, name)

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        try:
            return self._d.decompress(data, max_length) if max_length >= 0 else self._d.decompress(data)
        except (zlib.error, lzma.LZMAError, OSError, EOFError) as e:
            raise Damaged(str(e)) from None


class _Zstd:
    """zstandard's ``decompressobj`` behind ``lzma``'s interface: input is held and fed ``_ZST_STEP``
    bytes at a time until ``max_length`` bytes are out (one step over at most)."""

    def __init__(self):
        zstd = zstandard()
        self._error = zstd.ZstdError
        self._d = zstd.ZstdDecompressor().decompressobj()
        self._held, self._at = b"", 0
        self.unused_data = b""

    @property
    def eof(self) -> bool:
        return self._d.eof

    @property
    def needs_input(self) -> bool:
        return self._at >= len(self._held)

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        if data:
            self._held, self._at = self._held[self._at :] + data, 0
        out, size = [], 0
        try:
            while self._at < len(self._held) and not self._d.eof and (max_length < 0 or size < max_length):
                piece = self._d.decompress(self._held[self._at : self._at + _ZST_STEP])
                self._at += _ZST_STEP
                out.append(piece)
                size += len(piece)
        except self._error as e:
            raise Damaged(str(e)) from None
        if self._d.eof:
            self.unused_data = self._d.unused_data + self._held[self._at :]
            self._held, self._at = b"", 0
        return b"".join(out)
