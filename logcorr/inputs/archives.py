"""An archive given as an input (a ``logcorr collect`` bundle packed, or any folder of logs packed) →
the folder it holds, unpacked into scratch: a tar, plain or compressed (gz, xz, bz2, zst), or a zip.
What it is comes from its bytes (``packed``), never its name. ``paths.discover`` then reads that folder
as any folder (a bundle in it by its manifest).

Unpacking is bound as a compressed log's is (``source.UNPACK_RATIO`` times the archive's size, at least
``UNPACK_FLOOR``, in all; at most ``MAX_MEMBERS`` files): past it the archive is a decompression bomb and
nothing of it is read. A member that cannot be unpacked (a link or path out of the folder, refused by
tarfile's ``data`` filter; a zip member damaged, encrypted or of an unknown method) is named, the
others kept; a tar damaged part way keeps the members before the damage, and says so.
"""

from __future__ import annotations

import atexit
import bz2
import errno
import gzip
import lzma
import shutil
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from logcorr import scratch
from logcorr.inputs import packed
from logcorr.inputs.source import UNPACK_FLOOR, UNPACK_RATIO, InputError

MAX_MEMBERS = 20_000  # files in an archive: a collect bundle holds a few hundred
_PEEK = 1 << 16  # bytes of the file looked at; a bzip2 block may need more (``_peek``)
_PIECE = 1 << 20


def kind(path: Path) -> str | None:
    """What archive the file ``path`` is, from its first bytes: ``tar``, ``zip``, or a tar compressed
    (``tar.gz``, ``tar.xz``, ``tar.bz2``, ``tar.zst``); None for anything else, a folder, a file that
    cannot be opened, or a ``.zst`` when the ``zstandard`` module is missing (then read, and refused by
    name, as a compressed file). Never raises."""
    try:
        if not path.is_file():
            return None
        with open(path, "rb") as f:
            first = f.read(_PEEK)
            fmt = packed.kind(first)
            if fmt in packed.ARCHIVES:
                return fmt
            if fmt in packed.COMPRESSED and packed.kind(_peek(f, first, fmt)) == "tar":
                return f"tar.{fmt}"
    except (OSError, packed.Damaged, packed.MissingModule):
        return None
    return None


def _peek(f, first: bytes, fmt: str) -> bytes:
    """The first 512 unpacked bytes of a compressed file whose first bytes are ``first`` (``f`` open
    after them): a bzip2 block gives nothing until it is whole (up to 900 kB), so up to 2 MiB are fed."""
    d, out, data = packed.decompressor(fmt), b"", first
    for _ in range(32):
        out += d.decompress(data, 512 - len(out))
        if len(out) >= 512 or d.eof or not (data := f.read(_PEEK)):
            break
    return out


def unpack(path: Path, what: str, problems: list[tuple[Path, str]]) -> Path:
    """Unpack the archive ``path`` of kind ``what`` (``kind``) into a private folder (removed when the
    process ends) and return that folder. A member that cannot be unpacked, or the damage a tar ends in,
    is added to ``problems`` as ``(path/member, why)``, the rest kept.

    Raises ``InputError`` naming ``path`` when nothing in it can be unpacked, when it unpacks past the
    bound (a decompression bomb: nothing kept), or when TMPDIR is full."""
    into = scratch.folder("bundle")  # a run killed outright leaves it to the next (scratch.remove_stale)
    atexit.register(shutil.rmtree, into, True)
    limit = max(UNPACK_FLOOR, UNPACK_RATIO * path.stat().st_size)
    try:
        unpacked = (_unzip if what == "zip" else _untar)(path, what, into, limit, problems)
        if not unpacked:
            raise InputError(f"{path}: a {what} archive holding no file that could be unpacked")
    except BaseException:
        shutil.rmtree(into, True)
        raise
    return into


def _bomb(path: Path, limit: int) -> InputError:
    return InputError(
        f"{path}: not read: it unpacks to more than {UNPACK_RATIO} times its size ({limit:,} bytes)"
        f" or {MAX_MEMBERS:,} files: a decompression bomb, not a bundle (unpack it yourself and "
        "name the folder if it is one)"
    )


def _full(path: Path, e: OSError) -> InputError | None:
    """The error of a TMPDIR that is full, or None for any other ``OSError``."""
    if e.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    return InputError(
        f"{path}: not read: TMPDIR, where logcorr unpacks it, is full ({e.strerror}): set TMPDIR to a folder with room"
    )


class _Unpacked:
    """A compressed file read unpacked (``read`` only, what ``tarfile``'s stream mode needs); every
    decompressor's error is ``packed.Damaged``."""

    def __init__(self, path: Path, fmt: str):
        if fmt == "zst":
            zstd = packed.zstandard()
            self._errors: tuple = (zstd.ZstdError,)
            self._f = zstd.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)
        else:
            self._errors = (zlib.error, lzma.LZMAError, EOFError, gzip.BadGzipFile)
            opener = {"gz": gzip.open, "xz": lzma.open, "bz2": bz2.open, "": open}[fmt]
            self._f = opener(path, "rb")

    def read(self, size: int = -1) -> bytes:
        try:
            return self._f.read(size)
        except self._errors as e:
            raise packed.Damaged(str(e) or type(e).__name__) from None
        except OSError as e:  # bz2's damaged data (a read error of the disk reads the same)
            if e.errno is None:
                raise packed.Damaged(str(e)) from None
            raise

    def close(self) -> None:
        self._f.close()


def _untar(path: Path, what: str, into: Path, limit: int, problems: list[tuple[Path, str]]) -> int:
    """Unpack a tar (``what``: ``tar`` or ``tar.FMT``) member by member as it streams; returns the files
    unpacked."""
    written, unpacked, member = 0, 0, None
    try:
        source = _Unpacked(path, what.partition(".")[2])
    except packed.MissingModule as e:
        raise InputError(f"{path}: a {what} archive: not read: {e}") from None
    try:
        with tarfile.open(fileobj=source, mode="r|") as tar:  # type: ignore[call-overload]
            for n, member in enumerate(tar, 1):
                written += member.size
                if written > limit or n > MAX_MEMBERS:
                    raise _bomb(path, limit)
                try:
                    tar.extract(member, into, filter="data")
                except tarfile.FilterError as e:  # a link or path out of the folder, a device
                    problems.append(
                        (path / member.name, f"{path}: its member {member.name}: not unpacked: {e}")
                    )
                    continue
                unpacked += member.isfile()
    except OSError as e:
        if full := _full(path, e):
            raise full from None
        return _damaged(path, what, e, unpacked, member, problems)
    except (EOFError, tarfile.TarError, packed.Damaged) as e:
        return _damaged(path, what, e, unpacked, member, problems)
    finally:
        source.close()
    return unpacked


def _damaged(path: Path, what: str, e: BaseException, unpacked: int, member, problems: list) -> int:
    """What a tar damaged part way keeps: the files before the damage (and what of its data the
    ``member`` it hit holds, read as a cut log is), the damage named in ``problems``. Raises
    ``InputError`` when nothing came before it."""
    if not unpacked:
        raise InputError(f"{path}: a {what} archive that cannot be unpacked: {e}") from None
    where = f" in its member {member.name}" if member is not None else ""
    problems.append((path, f"{path}: unpacked {unpacked:,} files, then{where}: {e} (the rest is lost)"))
    return unpacked


def _unzip(path: Path, what: str, into: Path, limit: int, problems: list[tuple[Path, str]]) -> int:
    """Unpack a zip member by member, each streamed 1 MiB at a time against the bound (its sizes as
    written in the zip are not trusted); returns the files unpacked. Member names are kept inside
    ``into``: ``..``, ``.`` and a leading ``/`` are dropped, as ``zipfile.extract`` does."""
    written, unpacked = 0, 0
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as e:
        raise InputError(f"{path}: a zip archive that cannot be unpacked: {e}") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_MEMBERS:
            raise _bomb(path, limit)
        for info in infos:
            parts = [
                p for p in PurePosixPath(info.filename.replace("\\", "/")).parts if p not in ("/", ".", "..")
            ]
            target = into.joinpath(*parts) if parts else None
            try:
                if target is None:
                    raise ValueError("a name that is no file's")
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    while piece := src.read(_PIECE):
                        written += len(piece)
                        if written > limit:
                            raise _bomb(path, limit)
                        dst.write(piece)
            except InputError:
                raise
            except OSError as e:
                if full := _full(path, e):
                    raise full from None
                problems.append(_member(path, info.filename, e, target))
                continue
            except (
                zipfile.BadZipFile,
                NotImplementedError,
                RuntimeError,
                EOFError,
                ValueError,
                zlib.error,
                lzma.LZMAError,
            ) as e:
                problems.append(_member(path, info.filename, e, target))
                continue
            unpacked += 1
    return unpacked


def _member(path: Path, name: str, e: BaseException, target: Path | None) -> tuple[Path, str]:
    """A zip member that could not be unpacked, as a ``problems`` entry (its partial copy removed)."""
    if target is not None and target.is_file():
        target.unlink()
    return path / name, f"{path}: its member {name}: not unpacked: {e}"
