"""A ``logcorr collect`` bundle as inputs: its folder (an archive of it is unpacked by ``archives``) →
the files to read, each with its format, and the record chunks of the two formats only a bundle has.

A bundle is a folder whose ``manifest.json`` says ``"collector": "logcorr collect"``
(``logcorr.collect`` writes it). Its journal export, container logs and kernel lines are ordinary
inputs (sniffed as any file); its py-spy dumps (``bundle-pyspy``) are read as bare dumps whose every
line carries the exact capture time, host and unit the manifest recorded, so no ``--captured-at`` is
needed; the manifest itself (``bundle-manifest``) gives one record per step the collector took
(``parsers.collect.STEP_LINE``: endpoint answers with their latency, dumps taken or refused, with
why), which ingest turns into the ``probes`` table. Endpoint bodies, ``nvidia-smi -q`` and
``check_env`` output stay in the bundle, named by their step's record.

SGLang's own incident bundle (``incident_artifact_tool.py collect-bundle``, ``inputs.scrape``'s module
doc describes it) is a folder whose ``metadata.json`` says ``"artifact_type": "incident_bundle"``: its
metadata is read here too (``incident_metadata``), so that what a folder is, either kind of bundle, is
found in this module alone; ``inputs.scrape`` reads its answers into records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import polars as pl

from logcorr.inputs.source import (
    META_MAX,
    OUTSIDE_BUNDLE,
    InputError,
    SourceReport,
    in_folder,
    read_regular,
)
from logcorr.inputs.text import read_text
from logcorr.parsers import journald
from logcorr.parsers.collect import UNIT, step_line
from logcorr.store.schema import UTC_US, conform

COLLECTOR = "logcorr collect"
MANIFEST = "manifest.json"
MANIFEST_MAX = META_MAX  # bytes: a manifest lists a few hundred steps
FORMATS = ("bundle-pyspy", "bundle-manifest")
READ_AS_LOGS = ("journal", "container_log", "xid")  # steps whose file is a log, sniffed as any input
KEPT = "kept-in-bundle"  # the format of a step's file kept for people, not read: listed with why
UNLISTED = "not-in-manifest"  # a file in the bundle's folder its manifest does not name: named, not read
KEPT_WHY = {
    "kernel": "the kernel's ring buffer (dmesg), kept in the bundle; its GPU Xid lines are read from xid.txt",
    "gpu": "nvidia-smi -q, kept in the bundle to read",
    "check_env": "python -m sglang.check_env, kept in the bundle to read",
}
INCIDENT_METADATA = "metadata.json"  # an SGLang incident bundle's metadata file
INCIDENT_FORMAT = "sglang-bundle"  # its format: the endpoint answers it lists (``scrape.read_bundle``)
INCIDENT_METADATA_MAX = 1 << 20  # bytes: the metadata is a few fields


def manifest_of(folder: Path) -> dict | None:
    """The bundle manifest of ``folder``, or None when ``folder`` is no bundle (no ``manifest.json``,
    another tool's, unreadable JSON, not a regular file or over ``MANIFEST_MAX``)."""
    path = folder / MANIFEST
    try:  # a named pipe, a device or a huge file of that name is no manifest: never read it
        manifest = json.loads(read_regular(path, MANIFEST_MAX).decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("collector") == COLLECTOR else None


def incident_metadata(folder: Path) -> dict | None:
    """The ``metadata.json`` of an SGLang incident bundle in ``folder``, or None when there is none (no
    file, another tool's, unreadable, not a regular file or over ``INCIDENT_METADATA_MAX``)."""
    path = folder / INCIDENT_METADATA
    try:
        if not path.is_file() or path.stat().st_size > INCIDENT_METADATA_MAX:
            return None
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("artifact_type") == "incident_bundle" else None


def incident_inputs(folder: Path) -> list[tuple[Path, str]]:
    """The ``(path, format)`` inputs of an incident bundle: its ``metadata.json`` (``INCIDENT_FORMAT``:
    the endpoint answers) and ``metrics.txt`` when it was saved (sniffed as any file)."""
    found = [(folder / INCIDENT_METADATA, INCIDENT_FORMAT)]
    if (folder / "metrics.txt").is_file():  # a link out of the bundle is named, never read
        found.append((folder / "metrics.txt", "?" if in_folder(folder, "metrics.txt") else OUTSIDE_BUNDLE))
    return found


def collected_at(meta: dict) -> datetime | None:
    """An incident bundle's ``collected_at`` (``%Y%m%d_%H%M%S``, the collecting machine's local time) as a
    zoneless time; None when it is missing or no such time."""
    try:
        return datetime.strptime(str(meta.get("collected_at")), "%Y%m%d_%H%M%S")
    except ValueError:
        return None


def incident_host(meta: dict) -> str | None:
    """The host of an incident bundle's ``base_url`` (``http://10.0.0.5:30000`` → ``10.0.0.5``); None when
    it names none."""
    try:
        return urlsplit(str(meta.get("base_url") or "")).hostname
    except ValueError:
        return None


def inputs(folder: Path, manifest: dict) -> list[tuple[Path, str]]:
    """The ``(path, format)`` inputs of a bundle: the manifest (``bundle-manifest``), each py-spy dump
    taken (``bundle-pyspy``), and the logs it saved (``?``: sniffed as any file); the files of
    ``KEPT_WHY``'s steps are ``KEPT`` (listed, not read); a file the manifest names outside the bundle's
    folder (an absolute path, ``..``, a link out) is ``OUTSIDE_BUNDLE``; a file in the folder the
    manifest does not name (dropped in later) is ``UNLISTED`` (named, not read)."""
    found = [(folder / MANIFEST, "bundle-manifest")]
    found += [(p, UNLISTED) for p in unlisted(folder, manifest)]
    for a in _artifacts(manifest):
        if not isinstance(a.get("file"), str) or not a["file"]:
            continue
        path = in_folder(folder, a["file"])
        if path is None:  # outside the bundle: named in the ingest's notes, never read
            found.append((Path(os.path.normpath(folder / a["file"])), OUTSIDE_BUNDLE))
        elif path.exists() and not path.is_file():  # a pipe or device: named, never opened
            found.append((path, "skipped"))
        elif not path.is_file():
            continue
        elif a.get("kind") == "pyspy":
            found.append((path, "bundle-pyspy"))
        elif a.get("kind") in READ_AS_LOGS:
            found.append((path, "?"))
        elif a.get("kind") in KEPT_WHY:
            found.append((path, KEPT))
    return found


def unlisted(folder: Path, manifest: dict) -> list[Path]:
    """The files below the bundle ``folder`` (hidden ones aside, links not followed into folders) that
    are neither its manifest nor a file one of its steps names."""
    named = {os.path.normpath(a["file"]) for a in _artifacts(manifest) if isinstance(a.get("file"), str)}
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            rel = os.path.relpath(os.path.join(root, name), folder)
            if rel != MANIFEST and rel not in named:
                found.append(Path(root) / name)
    return found


def unlisted_note(path: Path) -> str:
    """Why an ``UNLISTED`` file of a bundle is not read."""
    return (
        f"{path}: in the bundle but not in its manifest: not read (a bundle reads what its manifest "
        "lists; name the file on the command line to read it)"
    )


def kept_note(path: Path) -> str:
    """Why a ``KEPT`` file of a bundle is not read: ``dmesg.txt: the kernel's ring buffer …``."""
    manifest = manifest_of(path.parent) or {}
    kind = next((a.get("kind") for a in manifest.get("artifacts", []) if a.get("file") == path.name), None)
    return f"{path}: {KEPT_WHY.get(kind, 'kept in the bundle')}: not read"


def hosts(path: Path, fmt: str) -> set[str]:
    """The host the manifest of the bundle holding ``path`` (a ``FORMATS`` input) names; empty when
    it names none or cannot be read."""
    manifest = manifest_of(path.parent if fmt == "bundle-manifest" else path.parent.parent) or {}
    return {manifest["host"]} if isinstance(manifest.get("host"), str) and manifest["host"] else set()


def read(path: Path, fmt: str, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Record chunks (``journald.RECORD_COLUMNS``) of a bundle's file: for ``bundle-pyspy`` the dump's
    lines with the capture time (UTC), host, boot id and unit of its step; for ``bundle-manifest`` one
    record per step (``parsers.collect.step_line``) at the time it started, unit ``parsers.collect.UNIT``.
    Raises ``InputError`` when the manifest beside the file cannot be read."""
    folder = path.parent if fmt == "bundle-manifest" else path.parent.parent
    manifest = manifest_of(folder)
    if manifest is None:
        raise InputError(f"{path}: not in a logcorr collect bundle (no readable {folder / MANIFEST})")
    host = {k: v if isinstance(v := manifest.get(k), str) else None for k in ("host", "boot_id")}
    if fmt == "bundle-manifest":
        steps = _artifacts(manifest)
        report.bytes += path.stat().st_size
        listed = manifest.get("artifacts")
        if not isinstance(listed, list) or len(steps) < len(listed):
            report.notes.append(f"{path}: {_malformed(listed, len(steps))}")
        elif not steps:
            report.notes.append(f"{path}: its artifacts list is empty: the bundle names no file to read")
        rows = [
            {
                **host,
                "ts": _time(a.get("started")),
                "unit": UNIT,
                "message": step_line(a),
                "source": report.source,
                "source_pos": f"artifact {i}",
                "stream": f"{report.source}|{i}",
            }
            for i, a in enumerate(steps)
        ]
        yield conform(pl.DataFrame(rows, infer_schema_length=None), journald.RECORD_COLUMNS, strict=False)
        return
    name = path.relative_to(folder).as_posix()
    step = next((a for a in _artifacts(manifest) if a.get("file") == name), {})
    at = _time(step.get("captured_at"))
    for chunk in read_text(path, "pyspy", report):
        yield chunk.with_columns(
            pl.lit(at, UTC_US).alias("ts"),
            pl.lit(host["host"], pl.String).alias("host"),
            pl.lit(host["boot_id"], pl.String).alias("boot_id"),
            pl.lit(step.get("unit") if isinstance(step.get("unit"), str) else None, pl.String).alias("unit"),
        )


def _artifacts(manifest: dict) -> list[dict]:
    """The manifest's steps that are objects (a manifest of other types names none)."""
    steps = manifest.get("artifacts")
    return [a for a in steps if isinstance(a, dict)] if isinstance(steps, list) else []


def _malformed(listed, good: int) -> str:
    """What is wrong with a manifest's ``artifacts`` (``listed``) of which ``good`` entries are objects."""
    if not isinstance(listed, list):
        return "its artifacts is not a list: the bundle names no file to read"
    return f"{len(listed) - good:,} of its {len(listed):,} artifacts are not objects: those are not read"


def _time(text) -> datetime | None:
    """An ISO time of the manifest as UTC, or None when it is none (missing, not text, not a time)."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if isinstance(text, str) and text else None
    except ValueError:
        return None
