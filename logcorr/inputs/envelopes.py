"""Line envelopes: what a container runtime or a log platform writes around each log line, the
patterns that recognise one line of each, and ``parse_lines``, which takes them off a column of lines.

The formats are those ``containers`` reads whole files of (its module doc names where each comes from:
Docker's json-file, the CRI format, ``kubectl logs --timestamps [--prefix]``, stern, ``kubectl
cluster-info dump``, a log platform's JSON lines) and whose single lines ``text`` takes off a paste;
``sniff`` recognises them, ``exports`` reads the times of a platform's lines. This module imports no
other reader: each of those imports it (one low-level module below them, so no import circle).
"""

from __future__ import annotations

import re

import polars as pl

from logcorr.store.schema import UTC_US

RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)"
DOCKER_LINE = r'^\{"log":\s*"'
CRI_LINE = rf"^(?P<time>{RFC3339}) (?P<fd>stdout|stderr) (?P<tag>[PF])(?::\S*)? ?(?P<text>.*)$"
# kubectl logs --timestamps [--prefix]; also Loki's logcli default output, ``<time> {k="v", …} <line>``
KUBECTL_LINE = (
    rf"^(?:\[pod/(?P<pod>[^/\]\s]+)/(?P<container>[^\]\s]+)\] )?(?P<time>{RFC3339}) "
    r'(?:\{(?P<labels>[\w.]+="[^"]*"(?:, ?[\w.]+="[^"]*")*)\} )?(?P<text>.*)$'
)
_DNS = r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?"
STERN_LINE = rf"^(?P<pod>{_DNS}-{_DNS}) (?P<container>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?) (?:(?P<time>{RFC3339}) )?(?P<text>.*)$"
LINE_KEYS = ("line", "log", "message", "msg")
# ``kubectl cluster-info dump``: each container's current log between these lines (clusterinfo_dump.go)
DUMP_SECTION = r"^==== (?P<edge>START|END) logs for container (?P<container>\S+) of pod (?P<namespace>[^/\s]+)/(?P<pod>\S+) ====$"
# a log platform's record, whatever its line looks like: VictoriaLogs, Elasticsearch/OpenSearch hits
PLATFORM_LINE_KEYS = ("_msg", "_source.message", "_source.log")

# Where each platform's record keeps the line, its time and its labels (the first one present wins):
# Loki logcli jsonl (``labels``, ``line``), Fluent Bit (``log``, ``date`` as epoch seconds,
# ``kubernetes.*_name``), Elasticsearch/OpenSearch hits (``_source``, ECS ``kubernetes.pod.name``,
# ``host.name``), Vector (``message``, ``timestamp``, ``host``, journald's ``_SYSTEMD_UNIT``/``_PID``),
# VictoriaLogs (``_msg``, ``_time``, stream fields as dotted keys), OTLP as ``exports`` flattens it.
LINE_PATHS = (*LINE_KEYS, "_msg", "_source.message", "_source.log", "_source.msg")
TIME_KEYS = (
    "timestamp", "time", "ts", "['@timestamp']", "date", "_time", "_source['@timestamp']",
    "_source.timestamp", "_source.time", "__REALTIME_TIMESTAMP",
)  # fmt: skip
_K8S = ("labels.{}", "labels.{}_name", "kubernetes.{}_name", "kubernetes.{}.name", "['kubernetes.{}_name']")
POD_PATHS = (
    *(p.format("pod") for p in _K8S), *(f"_source.{p.format('pod')}" for p in _K8S[2:4]), "pod", "pod_name",
)  # fmt: skip
CONTAINER_PATHS = tuple(
    p.replace("pod", "container") for p in POD_PATHS
)  # the same places, for the container
NAMESPACE_PATHS = (
    "labels.namespace", "kubernetes.namespace_name", "kubernetes.namespace", "['kubernetes.namespace_name']",
    "_source.kubernetes.namespace_name", "_source.kubernetes.namespace", "namespace",
)  # fmt: skip
NODE_PATHS = (
    "labels.node_name", "labels.node", "labels.host", "kubernetes.host", "kubernetes.node.name",
    "['kubernetes.host']", "_source.kubernetes.host", "_source.kubernetes.node.name", "_source.host.name",
    "host.name", "_source.host", "host", "hostname", "node", "_HOSTNAME",
)  # fmt: skip
# a unit where no pod or container is named: a journald field kept by Vector, a label, OTel's service
UNIT_PATHS = ("labels.unit", "_SYSTEMD_UNIT", "_source._SYSTEMD_UNIT", "labels.service_name", "labels.job")
PID_PATHS = ("_PID", "_source._PID", "pid")
# Fluent Bit's tail input without a CRI parser keeps the runtime's prefix in ``log``
CRI_PREFIX = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) (stdout|stderr) ([PF]) "


def rfc3339_us(expr: pl.Expr) -> pl.Expr:
    """An RFC 3339 time (``Z`` or an offset, 1 to 9 fraction digits) as UTC µs (ns cut); null when not
    one (a polars expression of strings → of ``UTC_US``; never raises)."""
    return expr.str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.f%#z", time_unit="ns", time_zone="UTC", strict=False
    ).dt.cast_time_unit("us")


def _any_time(expr: pl.Expr) -> pl.Expr:
    """A log platform's time: RFC 3339 / ISO (no zone: UTC), or epoch s, ms, µs or ns by size."""
    digits = expr.str.extract(r"^(\d{9,19})(?:\.\d+)?$", 1)
    n = digits.cast(pl.Int64, strict=False)
    size = digits.str.len_chars()
    seconds = (expr.cast(pl.Float64, strict=False) * 1e6).round().cast(pl.Int64)  # Fluent Bit: 1761773680.073
    epoch_us = (
        pl.when(size <= 11)
        .then(seconds)
        .when(size <= 14)
        .then(n * 1000)
        .when(size <= 17)
        .then(n)
        .otherwise(n // 1000)
    )
    iso = pl.coalesce(
        rfc3339_us(expr),
        expr.str.to_datetime(time_unit="us", strict=False).dt.replace_time_zone("UTC"),
    )
    return pl.coalesce(pl.from_epoch(epoch_us, time_unit="us").dt.replace_time_zone("UTC"), iso)


def _first_string(paths: tuple[str, ...], keys: frozenset[str] | None = None) -> pl.Expr:
    """The first of ``paths`` whose value is a JSON string: Dynamo's ``"line": 232`` is the source line
    that logged, its ``message`` the line. ``keys``: as ``_first_path``."""
    raw = pl.col("raw")
    return pl.coalesce(
        [
            raw.str.json_path_match(f"$.{p}")
            if "." in p
            else pl.when(raw.str.contains(rf'"{re.escape(p)}"\s*:\s*"')).then(
                raw.str.json_path_match(f"$.{p}")
            )
            for p in _held(paths, keys)
        ]
        or [pl.lit(None, pl.String)]
    )


def _first_path(paths: tuple[str, ...], keys: frozenset[str] | None = None) -> pl.Expr:
    """The value at the first of ``paths`` (JSONPath without ``$``) that a line holds; only the paths
    whose top key is in ``keys`` (None: all) are looked up: each lookup parses every line's JSON."""
    looked = [
        pl.col("raw").str.json_path_match(f"${p}" if p.startswith("[") else f"$.{p}")
        for p in _held(paths, keys)
    ]
    return pl.coalesce(looked or [pl.lit(None, pl.String)])


def _top_key(path: str) -> str:
    """The key a JSONPath (without ``$``) starts at: ``labels.unit`` → ``labels``, ``['@timestamp']`` →
    ``@timestamp``, ``_source['@timestamp']`` → ``_source``."""
    return path[2 : path.index("']")] if path.startswith("['") else re.split(r"[.\[]", path, maxsplit=1)[0]


def _held(paths: tuple[str, ...], keys: frozenset[str] | None) -> list[str]:
    return [p for p in paths if keys is None or _top_key(p) in keys]


_ALL_PATHS = (
    *LINE_PATHS, *TIME_KEYS, *POD_PATHS, *CONTAINER_PATHS, *NAMESPACE_PATHS, *NODE_PATHS, *UNIT_PATHS,
    *PID_PATHS, "_stream", "_source._stream", "stream",
)  # fmt: skip
_TOP_KEYS = frozenset(map(_top_key, _ALL_PATHS))


def keys_in(lines: pl.Series) -> frozenset[str] | None:
    """The top keys of ``_ALL_PATHS`` that some line of ``lines`` (JSON objects) writes, as ``"key"``:
    the paths of the others need no lookup. None (look every path up) when a line writes a ``\\u``
    escape, which may spell a key another way."""
    if lines.str.contains("\\u", literal=True).any():
        return None
    return frozenset(k for k in _TOP_KEYS if lines.str.contains(f'"{k}"', literal=True).any())


def parse_lines(lines: pl.Series, fmt: str) -> pl.DataFrame:
    """One row per input line of a container format: ``ts`` (UTC µs, null when the line has none),
    ``fd`` (stdout/stderr or null), ``partial`` (the next line of the same container and fd continues
    it), ``pod``, ``container``, ``namespace``, ``node`` (null where the line does not say), ``text``
    (the log line, without the final newline of a whole Docker line). A line not of the format is
    kept whole as ``text``. Vectorised; never raises."""
    df = pl.DataFrame({"raw": lines.cast(pl.String).fill_null("")})
    raw = pl.col("raw")
    if fmt == "docker-json":
        df = df.with_columns(raw.str.json_path_match("$.log").alias("log"))
        log = pl.col("log")
        cols = {
            "ts": rfc3339_us(raw.str.json_path_match("$.time")),
            "fd": raw.str.json_path_match("$.stream"),
            "partial": log.is_not_null() & ~log.str.ends_with("\n"),
            "text": log.str.strip_suffix("\n"),
        }
    elif fmt == "log-export":
        keys = keys_in(df["raw"])  # the paths no line of the chunk can hold are not looked up
        line = _first_string(LINE_PATHS, keys).str.strip_suffix("\n")
        stream = _first_path(("_stream", "_source._stream"), keys)  # VictoriaLogs: {k="v",…}
        cri = line.str.extract_groups(CRI_PREFIX)
        cols = {
            "ts": _any_time(_first_path(TIME_KEYS, keys)),
            "fd": pl.coalesce(_first_path(("stream",), keys), cri.struct.field("1")),
            "partial": (cri.struct.field("2") == "P").fill_null(False),
            "pod": pl.coalesce(_first_path(POD_PATHS, keys), _stream_label(stream, "pod")),
            "container": pl.coalesce(_first_path(CONTAINER_PATHS, keys), _stream_label(stream, "container")),
            "namespace": pl.coalesce(_first_path(NAMESPACE_PATHS, keys), _stream_label(stream, "namespace")),
            "node": pl.coalesce(_first_path(NODE_PATHS, keys), _stream_label(stream, "host")),
            "unit_field": _first_path(UNIT_PATHS, keys),
            "pid_field": _first_path(PID_PATHS, keys),
            "text": line.str.replace(CRI_PREFIX, ""),
        }
    elif fmt == "cluster-dump":  # the section lines name the container; its lines carry no time
        section = raw.str.extract_groups(DUMP_SECTION)
        cols = {k: section.struct.field(k) for k in ("pod", "container", "namespace")}
        cols |= {"ts": pl.lit(None, UTC_US), "fd": section.struct.field("edge"), "text": raw}
    else:
        pattern = {"cri": CRI_LINE, "kubectl": KUBECTL_LINE, "stern": STERN_LINE}[fmt]
        df = df.with_columns(raw.str.extract_groups(pattern).alias("m"))
        cols = {k: pl.col("m").struct.field(k) for k in re.findall(r"\(\?P<(\w+)>", pattern)}
        cols["ts"] = rfc3339_us(cols.pop("time"))
        if "labels" in cols:  # logcli's stream labels: {pod="…", container="…", namespace="…"}
            labels = pl.concat_str([pl.lit("{"), cols.pop("labels")])
            for name in ("pod", "container", "namespace"):
                cols[name] = pl.coalesce(cols.get(name, pl.lit(None, pl.String)), _stream_label(labels, name))
            cols["node"] = pl.coalesce(_stream_label(labels, "node"), _stream_label(labels, "host"))
        if "tag" in cols:
            cols["partial"] = (cols.pop("tag") == "P").fill_null(False)
    none = pl.lit(None, pl.String)
    return df.select(
        cols["ts"].alias("ts"),
        cols.get("fd", none).alias("fd"),
        cols.get("partial", pl.lit(False)).alias("partial"),
        *[
            cols.get(c, none).alias(c)
            for c in ("pod", "container", "namespace", "node", "unit_field", "pid_field")
        ],
        pl.coalesce(cols["text"], raw).alias("text"),
    )


def _stream_label(stream: pl.Expr, name: str) -> pl.Expr:
    """A label of a VictoriaLogs ``_stream`` (``{kubernetes.pod_name="x",…}``): ``NAME``, ``NAME_name``
    or ``NAME.name`` under any prefix."""
    return stream.str.extract(rf'(?:^\{{|,)\s*(?:[\w.]*\.)?{name}(?:_name|\.name)?="([^"]*)"', 1)
