"""A Prometheus scrape saved to a file, and SGLang's incident bundle → records.

A scrape (``prometheus`` format: ``curl http://engine:30000/metrics > metrics.txt``) becomes one record
per sample and ``# HELP``/``# TYPE``/``# UNIT`` line (unit ``parsers.prometheus.UNIT``, each a stream of
its own; any other line, a comment too, is kept as a record of kind ``other``: no line is dropped), which
``parsers.prometheus.metrics`` reads into the ``metrics`` table. A sample's time is its exposition
timestamp; else the scrape's: an incident bundle's ``collected_at``, else ``--captured-at``, else a
time in the file's name (``metrics_2026-08-04_11-58-42.txt``, ``…20260804T115842Z…``); a time without
a zone is taken as printed and said so, and without any the samples are kept undated.

SGLang's incident bundle (``incident_artifact_tool.py collect-bundle``, in SGLang's
``sglang-prod-incident-triage`` skill, 2026): a folder ``incident_bundle_<%Y%m%d_%H%M%S>/`` with
``metadata.json`` (``{"artifact_type": "incident_bundle", "base_url", "collected_at": "%Y%m%d_%H%M%S"}``,
local time), the text answers ``health.txt``, ``health_generate.txt``, ``metrics.txt`` (or, when one
failed, ``<file>.error.json``), and JSON answers wrapped as ``{"ok", "status", "path", "json" |
"text" | "error"}``: ``model_info.json``, ``server_info.json`` (``{**server_args, …, "version"}``),
``loads_all.json`` and ``loads_core_queues_disagg.json`` (``/v1/loads``), ``hicache_storage_backend.json``.
Its ``metadata.json`` (format ``sglang-bundle``) gives one ``probes`` record per endpoint (status,
error; the tool times none), the ``server_args`` and version records of ``server_info.json`` (the
``config`` row), and the numbers of the loads answers as ``loads:…`` samples (``metrics``);
``metrics.txt`` is read as any scrape, at ``collected_at``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from logcorr.inputs.bundle import INCIDENT_FORMAT, collected_at, incident_host, incident_metadata
from logcorr.inputs.source import CHUNK_BYTES, InputError, SourceReport
from logcorr.parsers import journald, prometheus
from logcorr.parsers.collect import UNIT as STEP_UNIT
from logcorr.parsers.collect import step_line
from logcorr.parsers.server_args_fields import FIELD_KINDS
from logcorr.store.schema import UTC_US, conform

FORMAT = "prometheus"
BUNDLE_FORMAT = INCIDENT_FORMAT  # the incident bundle's metadata, which ``read_bundle`` reads
MAX_SCRAPE_BYTES = 256 << 20  # a scrape of SGLang is a few hundred kB; larger is no scrape
MAX_ANSWER_BYTES = 64 << 20  # one endpoint answer of a bundle
# (file, endpoint) of the bundle tool's answers, in its order (ENDPOINT_SPECS)
BUNDLE_ANSWERS = (
    ("health.txt", "/health"),
    ("health_generate.txt", "/health_generate"),
    ("metrics.txt", "/metrics"),
    ("model_info.json", "/model_info"),
    ("server_info.json", "/server_info"),
    ("loads_all.json", "/v1/loads?include=all"),
    ("loads_core_queues_disagg.json", "/v1/loads?include=core,queues,disagg,spec"),
    ("hicache_storage_backend.json", "/hicache/storage-backend"),
)
# a time in a scrape's file name: 2026-08-04_11-58-42, 20260804_115842, 2026-08-04T11:58:42Z
NAME_TIME = re.compile(
    r"(?<!\d)(\d{4})-?(\d\d)-?(\d\d)[T_ -](\d\d)[:-]?(\d\d)[:-]?(\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)?(?!\d)"
)
ROLE_OF_ENGINE_TYPE = {"prefill": "prefill", "decode": "decode", "unified": "engine"}


def scrape_time(path: Path, captured_at: datetime | None) -> tuple[datetime | None, bool, str]:
    """When the scrape in ``path`` was taken: ``(time, zoneless, from what)``. From an incident bundle's
    ``collected_at`` beside it (local time, zoneless), else ``captured_at`` (UTC), else a time in the
    file's name (zoneless unless it prints ``Z`` or an offset); ``(None, False, "")`` when none says."""
    if (meta := incident_metadata(path.parent)) and (at := collected_at(meta)):
        return at, True, f"the bundle's collected_at {meta['collected_at']}"
    if captured_at is not None:
        return captured_at, False, "--captured-at"
    if m := NAME_TIME.search(path.name):
        y, mo, d, h, mi, s, zone = m.groups()
        try:
            at = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
        except ValueError:
            return None, False, ""
        if zone:
            offset = datetime.strptime(zone.replace(":", "").replace("Z", "+0000"), "%z").tzinfo
            return at.replace(tzinfo=offset).astimezone(UTC), False, "its file name"
        return at, True, "its file name"
    return None, False, ""


def _rows(frame: pl.DataFrame, at: datetime | None, zoneless: bool, host: str | None, report) -> pl.DataFrame:
    """Records (``journald.RECORD_COLUMNS``) of exposition lines (``frame``: ``message``, ``source_pos``):
    samples and ``# HELP/TYPE/UNIT`` lines of unit ``prometheus.UNIT`` at their own time or ``at``; any
    other line kept without a unit (kind ``other``)."""
    line = pl.col("message")
    sample = line.str.contains(prometheus.SAMPLE)
    typed = line.str.contains(prometheus.META)
    own = prometheus.sample_time(line.str.extract(prometheus.SAMPLE, 4))
    at_utc = at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at
    return frame.select(
        journald.record_columns(
            ts=pl.coalesce(pl.when(sample).then(own), pl.lit(at_utc, UTC_US)),
            host=pl.lit(host, pl.String),
            unit=pl.when(sample | typed).then(pl.lit(prometheus.UNIT)),
            message=line,
            source=pl.lit(report.source),
            source_pos=pl.col("source_pos"),
            stream=pl.format("{}|{}", pl.lit(report.source), pl.col("source_pos")),
            ts_zoneless=pl.when(sample & own.is_not_null()).then(False).otherwise(pl.lit(zoneless)),
        )
    )


def _blocks(path: Path) -> Iterator[tuple[pl.Series, int]]:
    """``(lines, first line number)`` of the scrape in ``path``, a block of about ``CHUNK_BYTES`` at a
    time cut after a newline: the lines ``journald.split_lines`` gives of the whole file, never all of
    them in memory at once."""
    line_no, rest = 1, b""
    with open(path, "rb") as f:
        while block := f.read(CHUNK_BYTES):
            data = rest + block
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
            if data:
                lines = journald.split_lines(data)
                yield lines, line_no
                line_no += len(lines)
    if rest:
        yield journald.split_lines(rest), line_no


def read(path: Path, report: SourceReport, captured_at: datetime | None) -> Iterator[pl.DataFrame]:
    """Record chunks of one scrape file (see the module doc), a block of lines at a time; ``report.notes``
    says how many samples of how many metrics, at what time and from what; ``report.unit_roles`` the
    role its ``engine_type`` labels name (found by a first pass over the file, before any record
    leaves). Raises ``InputError`` for a file over ``MAX_SCRAPE_BYTES``."""
    size = path.stat().st_size
    if size > MAX_SCRAPE_BYTES:
        raise InputError(
            f"{path}: {size >> 20} MiB is no single scrape (over {MAX_SCRAPE_BYTES >> 20} MiB): not read"
        )
    engines: set[str] = set()
    for lines, _ in _blocks(path):
        samples = lines.filter(lines.str.contains(prometheus.SAMPLE).fill_null(False))
        engines |= set(samples.str.extract(r'engine_type="([^"]*)"', 1).drop_nulls().unique().to_list())
    roles = {ROLE_OF_ENGINE_TYPE.get(e) for e in engines} - {None}
    if len(roles) == 1:
        report.unit_roles = {prometheus.UNIT: roles.pop()}  # type: ignore[attr-defined]
    report.bytes += size
    at, zoneless, said = scrape_time(path, captured_at)
    meta = incident_metadata(path.parent) if said.startswith("the bundle") else None
    families: set[str] = set()
    samples_n = own = other = 0
    for lines, first in _blocks(path):
        frame = pl.DataFrame({"message": lines}).with_row_index("n", first)
        frame = frame.filter(pl.col("message").str.strip_chars() != "").select(
            "message", pl.format("line {}", "n").alias("source_pos")
        )
        rows = _rows(frame, at, zoneless, incident_host(meta) if meta else None, report)
        samples = rows.filter(pl.col("message").str.contains(prometheus.SAMPLE))
        family = (
            samples["message"].str.extract(prometheus.SAMPLE, 1).str.replace(prometheus.FAMILY_SUFFIX, "")
        )
        families |= set(family.unique().to_list())
        samples_n += samples.height
        own += samples.height - int(samples["ts"].is_null().sum()) if at is None else 0
        other += int(rows["unit"].is_null().sum())
        if rows.height:
            yield rows
    when = (
        f"at {at:%Y-%m-%d %H:%M:%S}{' as printed (no zone)' if zoneless else ' UTC'} from {said}"
        if at
        else "with no time (give --captured-at, when it was scraped, to place them)"
    )
    report.notes.append(
        f"Prometheus scrape: {samples_n:,} samples of {len(families):,} metrics "
        + (f"dated by their own timestamps ({own:,})" if own == samples_n and own else when)
    )
    if other:
        report.notes.append(f"{other:,} line(s) that are no sample nor # HELP/TYPE line: kept as kind other")


def read_bundle(path: Path, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Records of an incident bundle's answers (``path`` its ``metadata.json``; see the module doc), all at
    its ``collected_at`` (zoneless), host the ``base_url``'s. Raises ``InputError`` when the metadata
    cannot be read."""
    meta = incident_metadata(path.parent)
    if meta is None:
        raise InputError(f"{path}: not an SGLang incident bundle's metadata (artifact_type incident_bundle)")
    folder, at, host = path.parent, collected_at(meta), incident_host(meta)
    base = str(meta.get("base_url") or "").rstrip("/")
    messages: list[tuple[str, str | None, str]] = []  # (text, unit, source_pos)
    for name, endpoint in BUNDLE_ANSWERS:
        answer, size = _answer(folder, name)
        if answer is None:
            continue
        failed = answer.get("ok") is False
        step = {
            "kind": "endpoint",
            "url": base + endpoint,
            "status": answer.get("status") if answer.get("status") != -1 else None,
            "bytes": size,
            "error": answer.get("error") if failed else answer.get("decode_error"),
        }
        messages.append((step_line(step, tool="sglang incident bundle", timed=False), STEP_UNIT, name))
        body = answer.get("json")
        if name == "server_info.json" and isinstance(body, dict):
            messages += [(text, None, name) for text in _server_info(body)]
        elif name.startswith("loads_") and isinstance(body, dict):
            messages += [(text, prometheus.UNIT, name) for text in _loads(body)]
    report.bytes += path.stat().st_size
    roles = {_role_of(mode) for text, unit, _ in messages if (mode := _mode(text))} - {None}
    if len(roles) == 1:  # the loads answers of a PD half are that half's
        report.unit_roles = {prometheus.UNIT: roles.pop()}  # type: ignore[attr-defined]
    at_utc = at.replace(tzinfo=UTC) if at else None
    rows = [
        {"ts": at_utc, "host": host, "unit": unit, "message": text, "source": report.source, "source_pos": pos,
         "stream": f"{report.source}|{i}", "ts_zoneless": at is not None}
        for i, (text, unit, pos) in enumerate(messages)
    ]  # fmt: skip
    report.notes.append(
        f"SGLang incident bundle of {base or 'an unnamed server'}"
        + (
            f" collected at {meta.get('collected_at')} (local time, taken as printed)"
            if at
            else ", no collected_at"
        )
        + f": {sum(1 for _, u, _ in messages if u == STEP_UNIT)} endpoint answer(s)"
    )
    if rows:
        yield conform(pl.DataFrame(rows, infer_schema_length=None), journald.RECORD_COLUMNS, strict=False)


def _mode(text: str) -> str | None:
    """The PD mode a bundle record names: ``disaggregation_mode='decode'`` or ``engine_type="decode"``."""
    m = re.search(r"disaggregation_mode='(\w+)'|engine_type=\"(\w+)\"", text)
    return (m.group(1) or m.group(2)) if m else None


def _role_of(mode: str) -> str | None:
    return ROLE_OF_ENGINE_TYPE.get(mode) or ("engine" if mode == "null" else None)


def _answer(folder: Path, name: str) -> tuple[dict | None, int]:
    """One endpoint's answer as the bundle tool wrote it, as ``{"ok", "status", "json"|"text"|"error"}``,
    and the bytes of its file; ``(None, 0)`` when the bundle has neither the file nor its ``.error.json``."""
    for file, text in ((folder / name, name.endswith(".txt")), (folder / f"{name}.error.json", False)):
        try:
            if not file.is_file() or file.stat().st_size > MAX_ANSWER_BYTES:
                continue
            data = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if text:  # a text answer is saved only when it came: urllib raises for a status of 400 and above
            return {"ok": True, "status": 200, "text": data}, len(data.encode())
        try:
            answer = json.loads(data)
        except ValueError:
            return {"ok": False, "status": None, "error": f"{file.name} is not JSON"}, len(data.encode())
        if isinstance(answer, dict):
            return answer, len(data.encode())
    return None, 0


def _server_info(info: dict) -> list[str]:
    """``/server_info``'s answer → a ``server_args=ServerArgs(…)`` line of the fields ServerArgs has
    (``parsers.server_args_fields``) and an ``sglang version: X`` line, as SGLang's own log prints them."""
    args = ", ".join(f"{k}={info[k]!r}" for k in FIELD_KINDS if k in info)
    lines = [f"server_args=ServerArgs({args})"] if args else []
    if info.get("version"):
        lines.append(f"sglang version: {info['version']}")
    return lines


def _loads(answer: dict) -> list[str]:
    """``/v1/loads``'s answer → ``loads:<path> value`` samples: every number of each DP rank's entry
    (``{dp_rank="N"}``) and of ``aggregate``; ``disaggregation.mode`` as ``engine_type``."""
    out = []

    def leaves(value, path):
        if isinstance(value, bool):
            yield path, float(value)
        elif isinstance(value, int | float):
            yield path, float(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from leaves(v, [*path, re.sub(r"\W", "_", str(k))])

    for i, load in enumerate(answer.get("loads") or []):
        if not isinstance(load, dict):
            continue
        dp = load.get("dp_rank", i)
        mode = (
            (load.get("disaggregation") or {}).get("mode")
            if isinstance(load.get("disaggregation"), dict)
            else None
        )
        labels = f'dp_rank="{dp}"' + (f',engine_type="{mode}"' if mode in ROLE_OF_ENGINE_TYPE else "")
        out += [f"loads:{'_'.join(p)}{{{labels}}} {v!r}" for p, v in leaves(load, []) if p != ["dp_rank"]]
    if isinstance(answer.get("aggregate"), dict):
        out += [f"loads:aggregate_{'_'.join(p)} {v!r}" for p, v in leaves(answer["aggregate"], [])]
    return out
