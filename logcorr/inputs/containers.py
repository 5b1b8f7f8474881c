"""Container runtimes' logs → reader records (``parsers.journald.RECORD_COLUMNS``).

Where PD deployments that do not run as systemd units keep their logs:

- Docker's ``json-file`` logging driver (https://docs.docker.com/engine/logging/drivers/json-file/):
  ``/var/lib/docker/containers/<id>/<id>-json.log``, one JSON object per line
  ``{"log":"…\\n","stream":"stdout","time":"<RFC3339Nano>"}``; a line longer than 16 KiB arrives as
  several objects, all but the last without the final ``\\n``. ``config.v2.json`` beside it holds the
  container's name, its labels (``com.docker.compose.service``, ``com.docker.compose.project``) and
  ``State.StartedAt``, when its current run began.
- the CRI logging format kubelet and containerd/CRI-O write on a Kubernetes node
  (https://github.com/kubernetes/design-proposals-archive/blob/main/node/kubelet-cri-logging.md):
  ``/var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart-count>.log``, lines
  ``<RFC3339Nano> stdout|stderr P|F <text>`` (``P``: a partial line the next one of the stream
  continues, ``F``: the full line's end); ``/var/log/containers/<pod>_<namespace>_<container>-<id>.log``
  are links to them.
- ``kubectl logs --timestamps`` (``<RFC3339Nano> <line>``), with ``--prefix`` (``[pod/NAME/CONTAINER] ``
  before it); ``stern``'s ``<pod> <container> <line>`` (with ``--timestamps``, the time after the names);
- a log platform's JSON-lines export (Loki ``logcli --output=jsonl``, fluent-bit/fluentd files,
  Elasticsearch/Datadog/CloudWatch exports): the line under ``line``, ``log``, ``message`` or ``msg``,
  the time under ``timestamp``, ``time``, ``ts``, ``@timestamp`` or ``date``, the pod and container
  under ``labels`` or ``kubernetes``.

Each container is a process stream of its own (``stream``: source, unit, stdout/stderr), re-joined
on its own; ``unit`` is ``<pod>/<container>`` (Kubernetes) or the compose service (Docker); ``host``
the node where the input names it; ``boot_id`` the container's run where the runtime tells it
(a CRI ``N.log`` file, a Docker container's run since ``State.StartedAt``): a new run is a restart.
``ts`` is the runtime's time (UTC, ns cut to µs); the time printed in the line becomes ``log_ts`` later.
Pods whose names and first lines do not look like SGLang are skipped, as journal units are.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import polars as pl

from logcorr.inputs import text
from logcorr.inputs.envelopes import parse_lines, rfc3339_us
from logcorr.inputs.sniff import head
from logcorr.inputs.source import LINE_PIECE, MAX_LINE_BYTES, MAX_RECORD_BYTES, read_regular
from logcorr.parsers import journald
from logcorr.parsers.roles import NAME_WORDS, ROUTER_PROCESS

FORMATS = ("docker-json", "cri", "kubectl", "stern", "log-export", "cluster-dump")

# /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart count>.log (rotated: .log.<date>[.gz])
POD_LOG = re.compile(
    r"(?:^|/)(?P<ns>[^/_]+)_(?P<pod>[^/_]+)_(?P<uid>[0-9a-fA-F-]{8,})/(?P<container>[^/]+)/"
    r"(?P<run>\d+)\.log(?:\.\d{8}-\d{6})?(?:\.gz)?$"
)
# /var/log/containers/<pod>_<namespace>_<container>-<container id>.log
CONTAINERS_LINK = re.compile(
    r"(?:^|/)(?P<pod>[^/_]+)_(?P<ns>[^/_]+)_(?P<container>[^/]+)-(?P<cid>[0-9a-f]{64})\.log$"
)
DOCKER_LOG = re.compile(r"(?:^|/)(?P<id>[0-9a-f]{64})-json\.log(?:\.\d+)?(?:\.gz)?$")
DOCKER_META = frozenset(
    {"config.v2.json", "hostconfig.json", "hostname", "hosts", "resolv.conf", "resolv.conf.hash"}
)
# A pod is an SGLang engine or router when its names, or its first lines, say so.
SGLANG_NAME = re.compile(r"sglang|sgl[-_]|prefill|decode|router|model[-_]gateway|\bsmg\b", re.IGNORECASE)
SGLANG_TEXT = (
    r"(?i)sglang|sgl[-_]router|model[-_]gateway|server_args=ServerArgs"
    r"|^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: DP\d+)?(?: PP\d+)?(?: TP\d+)"
)
MODE_TEXT = r"""disaggregation[-_]mode['"]?[=: ]+['"]?(prefill|decode)"""
ROUTER_TEXT = "(?i)" + ROUTER_PROCESS


# --- where a container's file says what it is ------------------------------------------------------


def _pod_meta(m: re.Match, run: str) -> dict:
    ns, pod, c = m["ns"], m["pod"], m["container"]
    return {
        "namespace": ns,
        "pod": pod,
        "container": c,
        "unit": f"{pod}/{c}",
        "run": run,
        "names": (pod, c, f"{pod}/{c}", f"{ns}/{pod}"),
        "started": None,
    }


@lru_cache(maxsize=4096)
def path_meta(path: str) -> dict | None:
    """What the path (and, for Docker, ``config.v2.json`` beside it) says of a container log:
    ``{"namespace", "pod", "container", "unit", "run", "names", "started"}``, or None when the path is
    none of the runtimes' layouts. ``run`` names the container's run (CRI: ``<uid>/<container>/<N>``;
    Docker: the container id); ``names`` are what ``--unit``/``--role`` may call it by; ``started`` is
    Docker's ``State.StartedAt`` (the current run's start) or None. A ``/var/log/containers`` link is
    read through to the ``/var/log/pods`` file it points at. Never raises."""
    p = Path(path)
    try:
        real = str(p.resolve()) if p.is_symlink() else path
    except OSError:
        real = path
    for candidate in (real, path):
        if m := POD_LOG.search(candidate):
            return _pod_meta(m, f"{m['uid']}/{m['container']}/{m['run']}")
    if m := CONTAINERS_LINK.search(path):
        return _pod_meta(m, m["cid"])
    if m := DOCKER_LOG.search(path):
        cid, refused = m["id"], None
        try:  # a pipe, a device or a huge file of that name is never read (nor waited on)
            config = json.loads(read_regular(p.parent / "config.v2.json").decode("utf-8", errors="replace"))
        except FileNotFoundError:
            config = {}
        except (OSError, ValueError, RecursionError) as e:
            config, refused = (
                {},
                f"{p.parent / 'config.v2.json'}: not read: {getattr(e, 'strerror', None) or e}",
            )
        config = _dict(config)
        labels = _dict(_dict(config.get("Config")).get("Labels"))
        name = str(config.get("Name") or "").lstrip("/") or None
        service, project = (_text(labels.get(f"com.docker.compose.{k}")) for k in ("service", "project"))
        started = _dict(config.get("State")).get("StartedAt")
        return {
            "refused": refused,
            "namespace": None,
            "pod": project,
            "container": name or cid[:12],
            "unit": service or name or cid[:12],
            "run": cid,
            "names": tuple(
                n for n in (service, name, project and service and f"{project}/{service}", cid, cid[:12]) if n
            ),
            "started": started if isinstance(started, str) and not started.startswith("0001-") else None,
        }
    return None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def not_a_log(path: Path) -> str | None:
    """Why a folder walk passes over one of Docker's container metadata files (``config.v2.json``,
    ``hostconfig.json``, ``hosts`` … beside a ``<id>-json.log``), else None."""
    if path.name in DOCKER_META and any(path.parent.glob("*-json.log")):
        return f"{path}: Docker's container metadata, not a log (its name and labels are read with the log)"
    return None


def _matches(names: tuple[str, ...], patterns: tuple[str, ...] | list[str]) -> bool:
    return any(fnmatch.fnmatchcase(n, pat) for n in names for pat in patterns)


def role_by_name(names: tuple[str, ...], overrides: dict[str, str]) -> str | None:
    """The role ``--role NAME=ROLE`` gives any of ``names``, else the one a name that looks like
    SGLang says (``…-prefill-0``, ``…-decode-1``, ``…-router-…``), else None."""
    for n in names:
        if n in overrides:
            return overrides[n]
    words = (role for n in names if SGLANG_NAME.search(n) for word, role in NAME_WORDS if word in n.lower())
    return next(words, None)


def skip_pod(path: Path, opts) -> str | None:
    """Why a folder walk skips this container log (a pod or container that does not look like an
    SGLang engine or router by its names or its first 64 KiB, or not among ``--unit``), else None.
    ``opts`` is a ``readers.ReadOptions``; ``--all-units`` reads every one. Never raises."""
    return _skip_pod(str(path), tuple(opts.units), bool(opts.all_units), tuple(sorted(opts.roles.items())))


@lru_cache(maxsize=4096)
def _skip_pod(path: str, units: tuple[str, ...], all_units: bool, roles: tuple) -> str | None:
    meta = path_meta(path)
    if meta is None or all_units:
        return None
    names = meta["names"]
    what = (
        f"pod {meta['namespace']}/{meta['pod']} container {meta['container']}"
        if meta["namespace"]
        else f"container {meta['unit']}"
    )
    if units:
        return None if _matches(names, units) else f"{path}: {what} is not among --unit {', '.join(units)}"
    if role_by_name(names, dict(roles)) or any(SGLANG_NAME.search(n) for n in names):
        return None

    try:
        first = head(Path(path), "gz" if path.endswith(".gz") else "?")
    except OSError:
        return None
    text = first.decode("utf-8", errors="replace").replace("\\n", "\n")
    if re.search(SGLANG_TEXT.removeprefix("(?i)"), text, re.IGNORECASE | re.MULTILINE):
        return None
    return f"{path}: {what} does not look like SGLang by its names or first lines (--unit NAME or --all-units reads it)"


# --- reading ----------------------------------------------------------------------------------------


def join_partials(df: pl.DataFrame, *, final: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Join each run of ``partial`` lines of one ``key`` (container and fd) with the line that ends it
    (Docker's 16 KiB splits, CRI ``P`` … ``F``): one row, the first part's time and position, the
    parts' text concatenated. A run longer than ``MAX_LINE_BYTES`` (no log line: a loop printing without
    a newline, a bomb) is kept in pieces as a long line of a file is (``text.lines_chunks``): rows of
    about ``MAX_RECORD_BYTES`` each, cut between parts, each at its first part's position; ``piece`` says
    which (0 a whole line, 1 a long run's first piece, 2 another), so a run that never ends is never
    held whole. ``df`` may carry ``piece`` 2 on its first row of a key: the rest of a run whose first
    pieces were returned before. Returns ``(joined, held)``: unless ``final``, the rows from the first
    run (or open piece) still open at the chunk's end on are held for the next chunk (input order kept)."""
    if "piece" not in df.columns:
        df = df.with_columns(pl.lit(0, pl.Int8).alias("piece"))
    part = (~pl.col("partial").shift(1).over("key").fill_null(False)).cum_sum().over("key")
    df = df.with_columns(part.alias("part"), pl.col("text").str.len_bytes().fill_null(0).alias("_b"))
    run = ("key", "part")
    before = pl.col("_b").cum_sum().over(run) - pl.col("_b")  # bytes of the run before this part
    long = (pl.col("_b").sum().over(run) > MAX_LINE_BYTES) | (pl.col("piece").first().over(run) == 2)
    sub = pl.when(long).then(before // MAX_RECORD_BYTES).otherwise(0)
    df = df.with_columns(long.alias("_long"), sub.alias("_sub"))
    new_seg = (pl.col("part") != pl.col("part").shift(1).over("key")) | (
        pl.col("_sub") != pl.col("_sub").shift(1).over("key")
    )
    df = df.with_columns(new_seg.fill_null(True).cum_sum().over("key").alias("seg"))
    held = df.clear()
    if not final:
        open_at = df.filter(
            (pl.col("seg") == pl.col("seg").max().over("key")) & pl.col("partial").last().over("key")
        )["n"].min()
        if open_at is not None:
            first = df.filter(pl.col("n") >= open_at).group_by("key").agg(pl.col("seg").min().alias("s0"))
            cut = df.join(first, on="key", how="left")
            start = cut.filter(pl.col("seg") == pl.col("s0"))["n"].min()
            held, df = df.filter(pl.col("n") >= start), df.filter(pl.col("n") < start)
            # the first held row of a run some of whose parts leave now: the rest of a long run
            ongoing = held.join(df.select("key", "part").unique(), on=run, how="semi")["n"]
            rest = (pl.col("n") == pl.col("n").min().over("key")) & pl.col("n").is_in(ongoing.implode())
            held = held.with_columns(pl.when(rest).then(pl.lit(2, pl.Int8)).otherwise("piece").alias("piece"))
    first_of_run = pl.col("n") == pl.col("n").min().over(run)
    piece = (
        pl.when(~pl.col("_long"))
        .then(0)
        .when(first_of_run & (pl.col("piece") != 2))
        .then(1)
        .otherwise(2)
        .cast(pl.Int8)
    )
    multi = df.filter(pl.len().over("key", "seg") > 1)
    df = df.with_columns(piece.alias("piece"))
    if multi.height:
        joined = multi.group_by("key", "seg").agg(pl.col("text").str.join("").alias("_text"))
        df = (
            df.filter(pl.col("n") == pl.col("n").min().over("key", "seg"))
            .join(joined, on=["key", "seg"], how="left", maintain_order="left")
            .with_columns(pl.coalesce("_text", "text").alias("text"))
            .drop("_text")
        )
    drop = ("part", "_b", "_long", "_sub", "seg")
    return df.drop(drop), held.drop(drop)


class PodChoice:
    """Which containers of one input are read, and the role of each: as ``journal.CaptureUnits`` does
    for a journal's units. ``--unit`` names (globs) choose by pod, container, ``pod/container`` or
    compose service; ``--all-units`` reads every one; otherwise the containers whose names (role
    words, ``sglang``) or first lines (an SGLang header, ``server_args``, ``sglang_router``) look like
    SGLang, and every one when the first chunk shows none. Roles: ``--role NAME=ROLE``, else the
    names, else ``--disaggregation-mode`` in its lines, else router by its lines, else ``unknown``."""

    def __init__(self, opts) -> None:
        self.opts = opts
        self.roles: dict[str, str] = {}  # unit → role, for the units read
        self.skipped: dict[str, int] = {}
        self.decided: dict[str, bool] = {}
        self.keep_all: bool | None = True if opts.all_units else None
        self.seen: set[str] = set()  # every name of every unit seen, read or not (``--role``'s check)

    def learn(self, df: pl.DataFrame) -> None:
        """Decide the units of ``df`` (columns ``unit``, ``names``, ``text``) seen for the first time."""
        df = df.with_columns(pl.col("unit").fill_null(""))
        new = df.filter(~pl.col("unit").is_in(list(self.decided)))
        if new.height == 0:
            return
        seen = new.group_by("unit", maintain_order=True).agg(
            pl.col("names").first(),
            pl.col("text").str.contains(SGLANG_TEXT).any().alias("sglang"),
            pl.col("text").str.extract(MODE_TEXT, 1).drop_nulls().first().alias("mode"),
            pl.col("text").str.contains(ROUTER_TEXT).any().alias("router"),
        )
        for unit, listed, sglang, mode, router in seen.iter_rows():
            names = tuple(listed or (unit,))
            self.seen.update(n for n in names if n)
            role = role_by_name(names, self.opts.roles)
            looks = bool(role) or bool(sglang) or any(SGLANG_NAME.search(n) for n in names)
            take = _matches(names, self.opts.units) if self.opts.units else looks
            # lines no prefix names (a paste's own prose, a fence) are no pod's: kept, never skipped
            take = take or (unit == "" and not self.opts.units)
            self.decided[unit] = take
            if take or self.opts.all_units:
                self.roles[unit] = role or mode or ("router" if router else None) or "unknown"
        if self.keep_all is None:
            self.keep_all = not self.opts.units and not any(self.decided.values())

    def keep(self, df: pl.DataFrame) -> pl.DataFrame:
        """The rows of the units read; the others counted as skipped."""
        if self.keep_all:
            for unit in df["unit"].fill_null("").unique().to_list():
                self.roles.setdefault(unit, "unknown")
            return df
        wanted = [u for u, t in self.decided.items() if t]
        mask = pl.col("unit").fill_null("").is_in(wanted)
        for unit, n in df.filter(~mask).group_by(pl.col("unit").fill_null("")).len().iter_rows():
            self.skipped[unit] = self.skipped.get(unit, 0) + n
        return df.filter(mask)

    def notes(self, kind: str) -> list[str]:
        """``pods chosen: …`` and ``pods skipped: … (N lines)`` for the summary."""
        if self.opts.all_units:
            notes = ["--all-units: every container"]
        elif self.keep_all:
            notes = [f"no {kind} looks like an SGLang engine or router: reading every one"]
        else:
            notes = []
        chosen = {u: r for u, r in self.roles.items() if u and (self.keep_all or self.decided.get(u))}
        if chosen:
            notes.append(f"{kind}s chosen: " + ", ".join(f"{u} ({r})" for u, r in sorted(chosen.items())))
        if self.skipped:
            listed = ", ".join(f"{u} ({n:,} line{'s' * (n != 1)})" for u, n in sorted(self.skipped.items()))
            notes.append(f"{kind}s skipped: {listed} (use --unit or --all-units to read them)")
        return notes


def read(path: Path, fmt: str, opts, report) -> Iterator[pl.DataFrame]:
    """Records of one container log (``fmt`` one of ``FORMATS``), streamed in chunks as
    ``readers.read_text`` does: each line parsed (``parse_lines``), partial lines joined
    (``join_partials``), the containers chosen (``PodChoice``), then the envelope a plain log line
    may still carry taken off as for text (``readers.text_records``: a Ray worker prefix …). The path
    named by ``report.source`` (the file given, not an unpacked copy) says the pod, container and run
    (``path_meta``). ``report.unit_roles`` gets each unit's role; ``report.notes`` the pods chosen and
    skipped. Never raises on content."""
    meta = path_meta(report.source) or {}
    if meta.get("refused"):  # Docker's metadata beside the log: the log is read without it
        report.notes.append(meta["refused"])
    started = rfc3339_us(pl.lit(meta.get("started"), pl.String)) if meta.get("started") else None
    choice = PodChoice(opts)
    report.unit_roles = choice.roles
    choice.seen = report.units_seen
    kind = "pod" if fmt in ("cri", "kubectl", "stern") or meta.get("namespace") else "container"
    run = pl.lit(meta.get("run"), pl.String)
    if started is not None:  # Docker: lines before the current run's start are of an earlier run
        run = pl.when(pl.col("ts") < started).then(run + pl.lit("@earlier")).otherwise(run)
    held, section, pieces = None, None, 0
    end = (pl.Series("line", [], pl.String), 0, None)  # after the last chunk: what is held is joined
    # (a piece of an over-long line is parsed as a line of its own)
    for lines, first, piece in itertools.chain(text.lines_chunks(path), [end]):
        report.bytes += int(lines.str.len_bytes().sum() or 0) + len(lines)
        df = parse_lines(lines, fmt).with_row_index("n", offset=first)
        df = df.with_columns(pl.col("n").cast(pl.Int64))
        if fmt == "cluster-dump":
            df, section = _in_sections(df, section)
        df = _units(df, meta).with_columns(pl.lit(0, pl.Int8).alias("piece"))
        if held is not None and held.height:
            df = pl.concat([held, df], how="vertical_relaxed")
        df, held = join_partials(df, final=piece is None)
        if df.height == 0:
            continue
        choice.learn(df)
        df = choice.keep(df)
        if df.height == 0:
            continue
        recs = text.text_records(df["text"], "text", report.source, 1, compose=False)
        # (a line holding a glued record is two records: each takes its line's row)
        rows = recs["source_pos"].str.slice(5).cast(pl.Int64) - 1
        df = df.select(pl.all().gather(rows)) if recs.height != df.height else df
        df = df.with_columns(
            pl.coalesce(df["pid_field"].cast(recs["pid"].dtype, strict=False), recs["pid"]).alias("pid"),
            recs["message"].alias("message"),
            recs["ts"].alias("inner_ts"),
        )
        pieces += int((df["piece"] == 1).sum())
        yield df.select(
            journald.record_columns(
                ts=pl.coalesce("ts", "inner_ts"),
                host=pl.col("node"),
                boot_id=run,
                unit=pl.col("unit"),
                pid=pl.col("pid"),
                message=pl.col("message"),
                source=pl.lit(report.source),
                source_pos=pl.format("line {}", pl.col("n")),
                stream=pl.concat_str(
                    [pl.lit(report.source), "unit", "fd", "pid"], separator="|", ignore_nulls=True
                ),
                entry_error=pl.when(pl.col("piece") > 0).then(pl.lit(LINE_PIECE)),
                entry_lines=pl.when(pl.col("piece") == 2).then(pl.lit(0, pl.Int32)),
            )
        )
    report.pieces += pieces
    if pieces:
        report.notes.append(
            f"{pieces} line(s) the runtime split into parts that joined make more than {MAX_LINE_BYTES >> 20} MiB:"
            f" kept in pieces of about {MAX_RECORD_BYTES >> 20} MiB, each marked in entry_error"
        )
    report.notes += choice.notes(kind)


def _in_sections(df: pl.DataFrame, section: dict | None) -> tuple[pl.DataFrame, dict | None]:
    """A ``cluster-dump`` chunk's lines with the pod, container and namespace of the section they are in
    (``section``: the one open at the chunk's start, or None), the START/END lines themselves dropped;
    and the section open at the chunk's end (None when the last marker closed one)."""
    names = ("pod", "container", "namespace")
    edge = pl.col("fd")
    df = df.with_columns(
        pl.when(edge == "START").then(pl.col(c)).when(edge == "END").then(pl.lit(""))
        .otherwise(None).forward_fill().fill_null(pl.lit((section or {}).get(c, ""))).alias(c)
        for c in names
    )  # fmt: skip
    last = df.tail(1).select(names).row(0, named=True) if df.height else section or {}
    carry = last if last.get("pod") else None
    df = df.filter(edge.is_null()).with_columns(pl.col(c).replace("", None) for c in names)
    return df, carry


def _units(df: pl.DataFrame, meta: dict) -> pl.DataFrame:
    """``unit`` (``pod/container``, or the path's), ``names`` (what ``--unit``/``--role`` may call it)
    and ``key`` (the stream partial lines join within) per row."""
    if meta:
        unit = pl.lit(meta["unit"])
        names = pl.lit(list(meta["names"]), pl.List(pl.String))
    else:
        pod, container, field = pl.col("pod"), pl.col("container"), pl.col("unit_field")
        unit = pl.coalesce(pl.concat_str([pod, container], separator="/"), pod, container, field)
        names = pl.concat_list(
            [
                pod,
                container,
                pl.concat_str([pod, container], separator="/"),
                pl.concat_str([pl.col("namespace"), pod], separator="/"),
                field,
            ]
        ).list.drop_nulls()
    return df.with_columns(unit.alias("unit"), names.alias("names")).with_columns(
        pl.concat_str([pl.col("unit"), pl.col("fd")], separator="|", ignore_nulls=True)
        .fill_null("")
        .alias("key")
    )
