"""Binary journals through ``journalctl``: the binary and its arguments, the ``--since/--until``
window, which units are an SGLang engine or router (``select_units``, ``CaptureUnits``), their launch
command lines, and ``read_journal`` (``journalctl -o export`` streamed through the export reader of
``logcorr.readers``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import polars as pl

from logcorr.inputs.export import Segment, export_chunks
from logcorr.inputs.source import InputError, ReadOptions, SourceReport
from logcorr.inputs.threads import ahead
from logcorr.parsers import journald
from logcorr.parsers.roles import role_from_text, unit_names
from logcorr.parsers.server_args import LAUNCH

JOURNAL_ONLY_FOR_UNITS = ("_CMDLINE", "_COMM", "SYSLOG_IDENTIFIER")
# A journal whose last UNIT_SAMPLE entries are at least READ_THROUGH_SHARE of the chosen units is read
# without journalctl --unit matches (see read_journal).
UNIT_SAMPLE = 5000
READ_THROUGH_SHARE = 0.8
# journalctl's output read from one journalctl before the next goes on after its last entry (read_journal):
# journalctl keeps the pages of the journal files it has read mapped, and they count in its RSS (0.06 GB
# after 100 MB of export output, 0.11 after 200, 0.24 GB for a 1 M-entry day's 586 MB of files): a segment
# bounds it at about 0.04 GB, for a journalctl started again every 64 MB (a few ms, the cursor found by bisection)
SEGMENT_BYTES = 64 << 20
# An ISO --since/--until window is read this much wider from a journal, then cut per record.
WINDOW_MARGIN = timedelta(seconds=60)
# A unit is an SGLang engine or router when its name, command line or process name says so.
SGLANG_UNIT = re.compile(r"sglang|sgl[-_]|prefill|decode|router|model[-_]gateway|\bsmg\b", re.IGNORECASE)
SGLANG_PROCESS = re.compile(r"sglang|sgl_router|sgl-router|sgl-model-gateway|\bsmg\b", re.IGNORECASE)


def _command(path: Path, *args: str) -> list[str]:
    """journalctl reading the journal folder or file ``path``, with ``args``. Raises ``InputError``
    when there is no journalctl, naming the capture formats that work without it."""
    exe = shutil.which("journalctl")
    if not exe:
        raise InputError(
            "journalctl not found: install systemd (Debian: apt-get install systemd) to read binary journals, "
            "or ingest a capture made on the host with journalctl -o export, -o json, -o short-iso, "
            "-o short-iso-precise, -o short-unix"
        )
    return [exe, "--directory" if path.is_dir() else "--file", str(path), *args]


def journalctl(path: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(path, *args),
        check=False,
        capture_output=True,
        text=text,
        errors="replace" if text else None,
    )


def unit_role(unit: str, overrides: dict[str, str], process_text: Callable[[str], str]) -> str | None:
    """The role of a unit that looks like an SGLang engine or router, else None: from ``--role``
    (``overrides``), else the unit's name, else its ``_CMDLINE`` (``unknown`` when the command is
    SGLang's but names no role), else its ``_COMM``. ``process_text(field)`` gives the field's values
    for the unit as one text; it is asked only when the name does not decide."""
    role = unit_names(overrides).get(unit) or (role_from_text(unit) if SGLANG_UNIT.search(unit) else None)
    if role:
        return role
    cmdlines = process_text("_CMDLINE")
    if SGLANG_PROCESS.search(cmdlines):
        return role_from_text(cmdlines) or "unknown"
    return "unknown" if SGLANG_PROCESS.search(process_text("_COMM")) else None


def _skipped_note(skipped: dict[str, int] | list[str]) -> str:
    """``units skipped: cron.service (6 entries), … (use --unit or --all-units to read them)``; a list
    of units names them without counts (journalctl left their entries out)."""
    if isinstance(skipped, dict):
        skipped = [f"{u} ({n:,} entr{'y' if n == 1 else 'ies'})" for u, n in sorted(skipped.items())]
    return f"units skipped: {', '.join(skipped)} (use --unit or --all-units to read them)"


def _kept(recs: pl.DataFrame, units: Iterable[str], skipped: dict[str, int]) -> pl.DataFrame:
    """The records of ``units`` (``of_units``) and those that could not be read whole (their unit is
    unknown); the others counted per unit in ``skipped``."""
    keep = of_units(units) | pl.col("entry_error").is_not_null()
    for unit, n in recs.filter(~keep).group_by("unit").len().iter_rows():
        name = unit or "(no unit)"
        skipped[name] = skipped.get(name, 0) + n
    return recs.filter(keep)


def _chosen_note(roles: dict[str, str]) -> str:
    return "units chosen: " + ", ".join(f"{u} ({r})" for u, r in sorted(roles.items()))


NO_SGLANG_UNIT = "no unit looks like an SGLang engine or router by its name or its processes' command lines"


def select_units(
    path: Path, opts: ReadOptions, report: SourceReport
) -> tuple[list[str], dict[str, str], list[str]]:
    """Choose the units to read from a journal and the role of each.

    Returns ``(units, roles, skipped)``. ``units`` empty means every entry. With ``opts.units`` those
    are taken as given; with ``opts.all_units`` every entry; otherwise the units that look like SGLang
    engines or routers by name, ``_CMDLINE`` or ``_COMM`` (``journalctl -F``), and every entry when
    none does; ``skipped`` names the units left out then. The choice is written to ``report.notes``
    (the skipped units by ``read_journal``, which may count their entries).
    """
    found = journalctl(path, "-F", "_SYSTEMD_UNIT")
    units = sorted(u for u in found.stdout.splitlines() if u)
    report.units_seen.update(units)
    roles: dict[str, str] = {}
    texts: dict[str, dict[str, str]] = {}  # per field, per unit (process_texts), read when first asked

    def process_text(field: str, unit: str) -> str:
        if field not in texts:
            texts[field] = process_texts(path, field)
        return texts[field].get(unit, "")

    for unit in units:
        role = unit_role(unit, opts.roles, lambda f, u=unit: process_text(f, u))
        if role:
            roles[unit] = role
    for name in opts.roles:
        if name not in units and f"{name}.service" not in units:
            report.notes.append(
                f"--role {name}={opts.roles[name]}: this journal has no unit {name}"
                + ("" if name.endswith(".service") else f" or {name}.service")
                + f" (its units: {', '.join(units) or 'none'})"
            )
    if opts.units:
        report.notes.append(f"units given: {', '.join(opts.units)}")
        return list(opts.units), roles, []
    if opts.all_units:
        report.notes.append("--all-units: every entry, with or without a unit")
        return [], roles, []
    chosen = [u for u in units if u in roles]
    if not chosen:
        hint = (
            "; name the engines' units with --unit UNIT, their roles with --role UNIT=ROLE" if units else ""
        )
        report.notes.append(f"{NO_SGLANG_UNIT} ({len(units)} unit(s)): reading every entry{hint}")
        return [], roles, []
    report.notes.append(_chosen_note({u: roles[u] for u in chosen}))
    return chosen, roles, [u for u in units if u not in roles]


def of_units(units: Iterable[str]) -> pl.Expr:
    """True for the records ``journalctl --unit U`` gives for the units (systemd 252
    ``add_matches_for_unit``): the unit's own entries (``_SYSTEMD_UNIT``), systemd's messages about
    it (``UNIT``), its coredumps (``COREDUMP_UNIT``) and other daemons' messages about it
    (``OBJECT_SYSTEMD_UNIT``); a superset, as the ``_PID=1``/``_UID=0`` conditions are not checked.
    Needs the ``unit``, ``systemd_unit`` and ``about_unit`` columns of the journald parsers."""
    wanted = list(units)
    return pl.any_horizontal(
        pl.col(c).is_in(wanted).fill_null(False) for c in ("unit", "systemd_unit", "about_unit")
    )


class CaptureUnits:
    """Unit selection for a journald capture (``-o export`` or ``-o json`` file) as ``select_units``
    makes it for a journal, decided while the capture streams by.

    ``read(chunks, report)`` keeps the records of the chosen units: those given with ``--unit``; else
    every record with ``--all-units``; else the units whose name, or the ``_CMDLINE``/``_COMM`` of
    their entries, look like an SGLang engine or router (journald puts those fields on every entry of
    a process, so a unit is known from its first entry). Records without a unit (the kernel) go with
    the others skipped; a line that could not be read whole (``entry_error``) is always kept. When
    the first chunk shows no such unit at all, every record is kept, as for a journal where no unit
    looks like SGLang. Units are judged by ``unit_role``, as for a journal. At the end, notes on
    ``report`` say what was chosen and skipped; ``report.unit_roles`` is filled as units appear.
    """

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self.keep_all: bool | None = True if opts.all_units else None
        self.roles: dict[str, str] = {}
        self.skipped: dict[str, int] = {}

    def read(self, chunks: Iterable[pl.DataFrame], report: SourceReport) -> Iterator[pl.DataFrame]:
        report.unit_roles = self.roles  # type: ignore[attr-defined]
        for recs in chunks:
            report.units_seen.update(recs["unit"].drop_nulls().unique().to_list())
            yield self._filter(recs)
        if self.opts.all_units:
            note = "--all-units: every entry, with or without a unit"
        elif self.opts.units:
            note = f"units given: {', '.join(self.opts.units)}"
        elif self.keep_all:
            note = f"{NO_SGLANG_UNIT}: reading every entry"
        else:
            note = _chosen_note(self.roles)
        report.notes += [note, _skipped_note(self.skipped)] if self.skipped else [note]

    def _filter(self, recs: pl.DataFrame) -> pl.DataFrame:
        if self.keep_all or recs.height == 0:
            return recs
        if not self.opts.units:
            self._learn(recs)
            if self.keep_all is None:  # the first chunk decides: does anything look like SGLang?
                self.keep_all = not self.roles
                if self.keep_all:
                    return recs
        return _kept(recs, self.opts.units or self.roles, self.skipped)

    def _learn(self, recs: pl.DataFrame) -> None:
        sglang = "(?i)" + SGLANG_PROCESS.pattern
        seen = (
            recs.filter(pl.col("unit").is_not_null() & ~pl.col("unit").is_in(list(self.roles)))
            .group_by("unit")
            .agg(  # per unit, its first SGLang-looking command line and command name, if any
                pl.col(c).filter(pl.col(c).str.contains(sglang)).first().fill_null("").alias(c)
                for c in ("cmdline", "comm")
            )
        )
        for unit, cmdline, comm in seen.iter_rows():
            text = {"_CMDLINE": cmdline, "_COMM": comm}
            if role := unit_role(unit, self.opts.roles, text.__getitem__):
                self.roles[unit] = role


def iso_utc(text: str) -> datetime | None:
    """An ISO 8601 time as an aware UTC datetime (no offset: UTC), or None when it is not one."""
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def journalctl_window(since: str | None, until: str | None) -> list[str]:
    """``--since/--until`` arguments for journalctl. An ISO time (``2025-10-29 21:30``, offset
    optional) is meant as UTC, like for every other input, so it is passed with an explicit ``UTC``
    (journalctl would read it in the machine's local zone); anything else (``yesterday``, ``-1h``)
    is passed as journalctl's own syntax (systemd.time(7)), and cut as journalctl cuts. When both
    given times are ISO times, the window is widened by ``WINDOW_MARGIN`` on each side: journalctl
    cuts between entries, so a traceback or dump that began just before ``--since`` would lose its
    first lines and one running past ``--until`` its last; ingest keeps the records whose first line
    is inside the window, as for every other input."""
    given = [(flag, text, iso_utc(text)) for flag, text in (("--since", since), ("--until", until)) if text]
    margin = WINDOW_MARGIN if all(t for _, _, t in given) else timedelta(0)
    args = []
    for flag, text, t in given:
        moved = t and t + (margin if flag == "--until" else -margin)
        form = "%Y-%m-%d %H:%M:%S.%f UTC" if moved and moved.microsecond else "%Y-%m-%d %H:%M:%S UTC"
        args += [flag, moved.strftime(form) if moved else text]
    return args


def _unit_share(path: Path, units: list[str], window_args: list[str]) -> float:
    """Share of the chosen units' entries among the last ``UNIT_SAMPLE`` entries of the journal
    (within ``--since/--until``): 0.0 when journalctl gives none."""
    fields = "--output-fields=_SYSTEMD_UNIT,UNIT,COREDUMP_UNIT,OBJECT_SYSTEMD_UNIT"
    args = ("-o", "export", "-a", "-n", str(UNIT_SAMPLE), fields, *window_args)
    sample = journalctl(path, *args, text=False).stdout
    recs = journald.parse_export(sample, source=str(path)) if sample else None
    if recs is None or recs.height == 0:
        return 0.0
    return float(recs.select(of_units(units).mean()).item())


def unit_cmdlines(path: Path, units: list[str]) -> list[dict]:
    """The SGLang launch command lines of a journal's ``units``, each with the first process that ran
    it: ``[{"unit", "pid", "boot_id", "host", "ts" (µs), "cmdline"}]``. Entries read from a journal
    leave ``_CMDLINE`` out (``JOURNAL_ONLY_FOR_UNITS``), so the ``config`` table gets them here:
    ``journalctl -F _CMDLINE`` (journald's field index, no entry read), then per launch command the
    first entry that carries it (``journalctl _CMDLINE=…``, stopped after one entry)."""
    found = journalctl(path, "-F", "_CMDLINE").stdout.splitlines()
    out = []
    for cmd in (c for c in found if LAUNCH.search(c)):
        entry = first_entry(path, f"_CMDLINE={cmd}", "_PID", "_SYSTEMD_UNIT", "_BOOT_ID", "_HOSTNAME")
        if entry.get("_SYSTEMD_UNIT") in units:
            pid, ts = (
                int(v) if (v := entry.get(k, "")).isdigit() else None
                for k in ("_PID", "__REALTIME_TIMESTAMP")
            )
            unit, boot_id, host = entry["_SYSTEMD_UNIT"], entry.get("_BOOT_ID"), entry.get("_HOSTNAME")
            out.append({"unit": unit, "pid": pid, "boot_id": boot_id, "host": host, "ts": ts, "cmdline": cmd})
    return out


def first_entry(path: Path, match: str | None, *fields: str, last: bool = False) -> dict[str, str]:
    """``fields`` (and the cursor and times) of the first entry of ``path`` that ``match``
    (``FIELD=value``; None: any) chooses, or with ``last`` of its last entry; ``{}`` when none does:
    journalctl is stopped after that entry."""
    args = [*([match] if match else []), *(["-n", "1"] if last else [])]
    proc = subprocess.Popen(
        _command(path, *args, "-o", "export", "--output-fields=" + ",".join(fields)),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    entry: dict[str, str] = {}
    try:
        for line in proc.stdout or ():
            if not line.strip():
                break
            k, _, v = line.rstrip("\n").partition("=")
            entry[k] = v
    finally:
        proc.kill()
        proc.wait()
    return entry


def entry_span(path: Path) -> tuple[datetime | None, datetime | None]:
    """The times (UTC) of the first and the last entry of the journal ``path``; None where it has none."""
    ends = []
    for last in (False, True):
        us = first_entry(path, None, "__REALTIME_TIMESTAMP", last=last).get("__REALTIME_TIMESTAMP", "")
        ends.append(datetime.fromtimestamp(int(us) / 1e6, UTC) if us.isdigit() else None)
    return ends[0], ends[1]


def process_texts(path: Path, field: str) -> dict[str, str]:
    """Per unit of the journal ``path``, the SGLang-looking values of ``field`` (``_CMDLINE``,
    ``_COMM``) its processes logged, one per line. Read from journald's field index (``journalctl
    -F FIELD``, no entry read), then the unit of each such value's first entry: systemd 252's
    journalctl refuses ``-F`` beside a match (``_SYSTEMD_UNIT=U -F _CMDLINE``: "Extraneous
    arguments"), so a unit's own values cannot be asked for directly there."""
    texts: dict[str, list[str]] = {}
    for value in journalctl(path, "-F", field).stdout.splitlines():
        if SGLANG_PROCESS.search(value):
            unit = first_entry(path, f"{field}={value}", "_SYSTEMD_UNIT").get("_SYSTEMD_UNIT")
            if unit:
                texts.setdefault(unit, []).append(value)
    return {unit: "\n".join(values) for unit, values in texts.items()}


def header_entries(path: Path) -> int:
    """The entries the journal files of ``path`` (a folder or one ``.journal`` file) say they hold: the
    sum of ``Entry objects`` of ``journalctl --header`` (systemd 252+), 0 when it cannot tell."""
    try:
        text = journalctl(path, "--header").stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(int(n) for n in re.findall(r"(?m)^Entry objects: (\d+)$", text))


def _refused(given: str, path: Path, said: str) -> str:
    """What to tell when journalctl gave no entry of ``path`` (``given``: its name as the user gave it):
    journalctl's words, the file's size, and what to try."""
    if not path.is_file():
        return f"{given}: journalctl refused it: {said} (`journalctl --directory {given} --verify` names the damaged file)"
    return (
        f"{given}: journalctl refused it: {said}. The file holds {path.stat().st_size:,} bytes: journalctl"
        " refuses a .journal file given by name that it cannot open, such as one cut short (copied while"
        f" journald wrote it, a truncated upload). Try `journalctl --file {given} --verify`; on the host, `journalctl -o export"
        " > FILE` gives a capture logcorr reads entry by entry, as far as it goes"
    )


def unopenable(path: Path) -> list[str]:
    """The ``.journal`` files of a journal folder (or the file) that cannot be opened for reading, each
    named with why: journalctl leaves such a file out silently, and its header out of the count
    ``header_entries`` compares with. Never raises."""
    try:
        files = [path] if path.is_file() else [f for f in path.rglob("*.journal*") if f.is_file()]
    except OSError:
        return []
    bad = []
    for f in files:
        try:
            with open(f, "rb"):
                pass
        except OSError as e:
            bad.append(f"{f}: journalctl cannot open it ({e.strerror or e}): its entries are not read")
    return bad


# What journalctl says, at debug level only, when it passes over damage (systemd 219 to 257): an entry
# it skips ("Entry item 1246 is bad, skipping over it.", "Entry 7 of FILE is bad, skipping over it: …")
# and a file it stops reading ("Can't iterate through FILE, ignoring: Bad message").
SKIPPED_ENTRY = re.compile(r"\bis bad, skipping over it\b")
SKIPPED_FILE = re.compile(r"^Can't iterate through (?P<file>.+), ignoring: (?P<why>.*)$")
# What journalctl says on stderr, exiting 0, of a file of the folder it leaves out whole (systemd 252's
# sd-journal: "Journal file F corrupted, ignoring file.", "… is truncated, …", "… uses an unsupported
# feature, …", "… has unknown incompatible flags …"): a zeroed or foreign header
IGNORED_FILE = re.compile(r"^Journal file (?P<file>.+?\.journal~?) (?P<why>.+?), ignoring file\.?$")


def _damage_walk(path: Path, args: list[str], err: IO[bytes]) -> subprocess.Popen:
    """Start journalctl walking the entries the read chooses (``args``: its unit matches and window)
    with no output but its debug log, into ``err``: there alone it says what damage it skipped (see
    ``damage_said``). Raises ``InputError`` when there is no journalctl."""
    return subprocess.Popen(
        _command(path, "-o", "cat", "--output-fields=LOGCORR_NO_FIELD", *args),
        stdout=subprocess.DEVNULL,
        stderr=err,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug", "SYSTEMD_COLORS": "0"},
    )


def damage_said(source: str, path: Path, log: str) -> list[str]:
    """The errors to report for the damage journalctl's debug ``log`` says it skipped while reading
    ``path`` (``source``: the name the user gave): each file it stopped reading part way, and the count
    of damaged entries it skipped over; [] when it skipped nothing."""
    said = []
    for line in log.splitlines():
        if m := SKIPPED_FILE.match(line.strip()):
            said.append(
                f"{source}: journalctl stopped reading {m['file']} at damage ({m['why']}): its entries after it"
                f" are not read (a corrupt file? `journalctl --verify --file {m['file']}` shows where)"
            )
    if n := len(SKIPPED_ENTRY.findall(log)):
        said.append(
            f"{source}: journalctl skipped {n:,} damaged entr{'y' if n == 1 else 'ies'} (a corrupt file?"
            f" `journalctl --verify {_command(path)[1]} {path}` names it)"
        )
    return said


class _Segments:
    """The journalctl runs of one read (``read_journal``): a journalctl per ``SEGMENT_BYTES`` of its output,
    each going on after the last entry read (``_after_cursor``): one stream, as one journalctl would give
    it, but no journalctl holds more of the files' pages mapped than a segment's. ``proc`` is the running
    (or last) journalctl, ``got`` the entries read; its stderr goes to ``err``."""

    def __init__(self, args: list[str], err: IO[bytes]) -> None:
        self.args, self.err = args, err
        self.proc: subprocess.Popen | None = None
        self.segment: Segment | None = None
        self.got = 0

    def chunks(self, report: SourceReport) -> Iterator[pl.DataFrame]:
        """The records of the stream, a chunk at a time (``export_chunks``), segment after segment."""
        after = None
        while True:
            self.proc = proc = subprocess.Popen(
                _after_cursor(self.args, after) if after else self.args,
                stdout=subprocess.PIPE,
                stderr=self.err,
            )
            assert proc.stdout is not None
            self.segment = Segment(proc.stdout, SEGMENT_BYTES)
            blocks = ahead(self.segment.blocks(), name="logcorr-journalctl")
            chunks = export_chunks(blocks, report.source, report, first_entry=self.got, segment=self.segment)
            while True:
                try:
                    df = next(chunks)
                except StopIteration as end:  # its value: where the next segment goes on, or None
                    resume = end.value
                    break
                self.got += df.height
                yield df
            if resume is None:
                return
            after, self.got = resume
            proc.kill()  # this segment's journalctl need not go on
            proc.wait()
            self.segment.go_on()  # its thread reads the pipe's end and stops
            blocks.close()
            proc.stdout.close()

    def release(self) -> None:
        """Let the pipe's reading thread go on to the end (an abandoned read: it is not left waiting)."""
        if self.segment is not None:
            self.segment.go_on()


def _after_cursor(args: list[str], cursor: str) -> list[str]:
    """journalctl's ``args`` going on after the entry at ``cursor``: ``--after-cursor``, and without
    ``--since`` (journalctl takes one of the two; the cursor is inside the window already)."""
    at = args.index("--since") if "--since" in args else None
    kept = args if at is None else args[:at] + args[at + 2 :]
    return [*kept, f"--after-cursor={cursor}"]


def read_journal(path: Path, opts: ReadOptions, report: SourceReport) -> Iterator[pl.DataFrame]:
    """Records of a journal directory or ``.journal`` file through ``journalctl -o export``.

    Runs ``journalctl --directory|--file PATH -o export -a --output-fields=… [-u U…] [--since]
    [--until]``, without the ``-u`` matches when the chosen units hold most entries (``of_units``
    then chooses the same entries here, see ``_unit_share``); reads its pipe on a thread, a journalctl
    per ``SEGMENT_BYTES`` of output, each going on after the last entry read (``--after-cursor``);
    journalctl's complaints on stderr (a truncated or corrupt file it skips) go to ``report.errors``.
    Damage in the middle of a file journalctl passes over without a word: without unit matches and
    window, the entries read are compared with the count the files' headers hold; with them (that
    count is then of other entries), a second journalctl walks the same entries beside the read and
    its debug log tells what it skipped (``damage_said``). Either marks the input ``incomplete``.
    Raises ``InputError`` when journalctl is missing or refuses the input and gave no entry.
    """
    units, roles, skipped_units = select_units(path, opts, report)
    if roles:
        report.notes.append("roles: " + ", ".join(f"{u}={r}" for u, r in sorted(roles.items())))
    report.unit_roles = roles  # type: ignore[attr-defined]
    report.unit_cmdlines = unit_cmdlines(path, [u for u in units or roles if roles.get(u) != "router"])  # type: ignore[attr-defined]
    window_args = journalctl_window(opts.since, opts.until)
    # journalctl reads a fifth slower with --unit matches than straight through: when nearly every
    # entry is of the chosen units anyway, read straight through and choose the entries here. Units
    # given by the user may be globs or slices: those stay journalctl's.
    match = bool(opts.units) or (bool(units) and _unit_share(path, units, window_args) < READ_THROUGH_SHARE)
    # _CMDLINE, _COMM and SYSLOG_IDENTIFIER only serve choosing units (select_units asks for them
    # once per unit): leaving them out of every entry spares journalctl and the parser a tenth
    fields = "--output-fields=" + ",".join(f for f in journald.FIELDS if f not in JOURNAL_ONLY_FOR_UNITS)
    unit_args = [a for u in units for a in ("--unit", u)] if match else []
    args = _command(path, "-o", "export", "-a", fields, *unit_args, *window_args)
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as walk_log:
        walk = _damage_walk(path, unit_args + window_args, walk_log) if unit_args or window_args else None
        skipped, read_all, damage = {}, False, []
        runs = _Segments(args, err)
        try:
            for df in runs.chunks(report):
                yield _kept(df, units, skipped) if units and not match else df
            read_all = True
        finally:
            runs.release()
            proc, got = runs.proc, runs.got
            for p in (proc, walk):
                if p is not None and not read_all and p.poll() is None:  # abandoned by the reader
                    p.kill()  # journalctl need not go on
            rc = proc.wait() if proc is not None else -1  # (None: journalctl did not start; raised on)
            stderr = ""
            if not err.closed:  # closed when the interpreter tears down an abandoned reader
                err.seek(0)
                stderr = err.read().decode("utf-8", errors="replace").strip()
            if walk is not None and walk.wait() == 0 and not walk_log.closed:
                walk_log.seek(0)
                damage = damage_said(report.source, path, walk_log.read().decode("utf-8", errors="replace"))
    if rc != 0 and got == 0:  # named as the user gave it (not the unpacked copy of an .xz), once
        raise InputError(_refused(report.source, path, stderr or f"exit status {rc}"))
    if rc != 0:  # killed, or an error after some entries: what came is kept, and said to be part
        how = f"was killed by signal {-rc}" if rc < 0 else f"ended with exit status {rc}"
        report.errors.append(f"{report.source}: journalctl {how} after {got:,} entries: more may exist")
        report.incomplete = True
    elif not unit_args and not window_args and got < (total := header_entries(path)):
        report.errors.append(
            f"{report.source}: journalctl gave {got:,} of the {total:,} entries its files' headers count "
            f"({total - got:,} not read: a corrupt file? `journalctl --verify {_command(path)[1]} {path}` names it)"
        )
        report.incomplete = True
    if damage:  # the files' header counts cannot tell this with unit matches or a window
        report.errors += damage
        report.incomplete = True
    for why in unopenable(path):  # journalctl leaves such a file out without a word (and its header count)
        report.errors.append(why)
        report.incomplete = True
    # read straight through, the entries skipped are known and counted
    if not_read := skipped if units and not match else skipped_units:
        report.notes.append(_skipped_note(not_read))
    for line in stderr.splitlines():
        if m := IGNORED_FILE.match(line.strip()):  # its entries are in no count logcorr could compare
            report.errors.append(
                f"{m['file']}: journalctl left this file out ({m['why']}): its entries are not read"
                f" (`journalctl --verify --file {m['file']}` shows what is wrong)"
            )
            report.incomplete = True
    report.errors += [f"journalctl: {line}" for line in stderr.splitlines()]
    if got == 0:
        report.errors.append(
            f"{report.source}: journalctl found no entries (units or --since/--until chosen?)"
        )
