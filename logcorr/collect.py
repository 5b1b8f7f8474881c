"""``collect()``: the evidence of a wedge on one host, taken in one bounded run before the restart.

Finds the SGLang processes by their titles (``sglang::scheduler_TP0`` …, set by SGLang with
setproctitle), their systemd units or containers (``/proc/PID/cgroup``) and the ports they listen on
(``/proc/net/tcp*``); takes ``py-spy dump`` of every scheduler in rounds; saves the journal of their
units over ``since`` (``journalctl -o export``, bounded) or their containers' logs; asks the engines'
and the router's endpoints; takes ``nvidia-smi -q``, the kernel's Xid lines and ``python -m
sglang.check_env`` when present. Writes ``BUNDLE/manifest.json`` and one file per artifact (optionally
``BUNDLE.tar.gz``); ``logcorr ingest BUNDLE`` reads it (``logcorr.inputs.bundle``).

Safe by construction: it only reads. No signal is sent to any process; ``py-spy dump`` pauses the
process it reads for the moment of the dump (milliseconds). Every step is bounded by the budget, and a
step that fails (no ptrace permission, a tool missing, a timeout) is recorded with its reason, never
fatal. A plain function; nothing here imports typer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import logcorr

COLLECTOR = "logcorr collect"  # manifest["collector"]: what tells a bundle from other folders
TITLE = re.compile(r"^sglang::(\w+)")
SCHEDULER = re.compile(r"^sglang::scheduler")
# Processes of SGLang that keep the interpreter's command line: the tokenizer/HTTP server, the router.
COMMANDS = {
    "http_server": re.compile(
        r"-m\s+sglang\.launch_server|sglang/launch_server\.py|sglang\.srt\.entrypoints"
    ),
    "router": re.compile(r"sglang_router|sglang-router"),
}
ENDPOINTS = (
    "/health",
    "/health_generate",
    "/server_info",
    "/get_server_info",
    "/v1/loads?include=all",
    "/metrics",
)
UNIT = re.compile(r"/([^/]+\.service)(?:/|$)")
CONTAINER = re.compile(r"(?:docker-|cri-containerd-|crio-|/docker/)([0-9a-f]{64})")
SPAN = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$")
SPAN_UNITS = {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400}
PTRACE_FIX = (
    "run as root or with CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE; a pod's securityContext "
    "capabilities.add: [SYS_PTRACE]), or allow tracing non-children: sysctl kernel.yama.ptrace_scope=0"
)
JOURNAL_CAP = 256 << 20  # bytes of journal export kept at most
BODY_CAP = 8 << 20  # bytes of one endpoint's answer kept at most
SUBFOLDERS = ("pyspy", "endpoints", "containers")  # of a bundle: an artifact's file there is named with it


class CollectError(ValueError):
    """An option's value cannot be used (a span, the output folder); the message names it."""


def parse_span(option: str, text: str) -> float:
    """Seconds of a span like ``30m``, ``5s``, ``1.5h``, ``250ms`` or ``90`` (seconds). Raises
    ``CollectError`` naming ``option`` for anything else."""
    m = SPAN.match(text.strip())
    if not m:
        raise CollectError(f"{option} {text!r}: not a span (examples: 30m, 5s, 1h, 250ms)")
    return float(m.group(1)) * SPAN_UNITS[m.group(2)]


@dataclass
class Process:
    """One SGLang process found on this host: its pid, title (the command line as ``ps`` shows it),
    role from the title (``scheduler_TP0``, ``detokenizer``, ``http_server``, ``router``), systemd
    unit or container id from its cgroup, and the TCP ports it listens on."""

    pid: int
    title: str
    role: str
    unit: str | None = None
    container: str | None = None
    ports: list[int] = field(default_factory=list)


def find_processes(proc: Path = Path("/proc")) -> list[Process]:
    """The SGLang processes under ``proc`` (``/proc``), by title (``sglang::…``) or by the command
    line of the HTTP server and the router, in pid order. A process that vanishes or cannot be read
    meanwhile is passed over; ports are those of ``/proc/net/tcp`` and ``tcp6`` listening sockets
    whose inode is among the process's open files (readable for one's own processes, or as root)."""
    listening = _listening(proc)
    found = []
    for d in sorted((p for p in proc.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        try:
            argv = (d / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            cgroup = (d / "cgroup").read_text(errors="replace")
        except OSError:
            continue
        title = " ".join(a.decode(errors="replace") for a in argv).strip()
        m = TITLE.match(title)
        role = m.group(1) if m else next((r for r, rx in COMMANDS.items() if rx.search(title)), None)
        if role is None or int(d.name) == os.getpid():
            continue
        unit, container = UNIT.search(cgroup), CONTAINER.search(cgroup)
        found.append(
            Process(
                int(d.name),
                title,
                role,
                unit.group(1) if unit else None,
                container.group(1) if container else None,
                sorted({listening[i] for i in _socket_inodes(d) if i in listening}),
            )
        )
    return found


def _listening(proc: Path) -> dict[int, int]:
    """Socket inode → port of every TCP socket in state LISTEN (``0A``) in ``proc/net/tcp{,6}``."""
    ports = {}
    for name in ("tcp", "tcp6"):
        try:
            rows = (proc / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A":
                ports[int(cols[9])] = int(cols[1].rsplit(":", 1)[1], 16)
    return ports


def _socket_inodes(d: Path) -> set[int]:
    inodes = set()
    try:
        for fd in (d / "fd").iterdir():
            with_link = os.readlink(fd) if fd.is_symlink() else ""
            if with_link.startswith("socket:["):
                inodes.add(int(with_link[8:-1]))
    except OSError:
        pass
    return inodes


class _Budget:
    """The run's deadline: what is left of ``--budget``, with a reserve for writing the manifest."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self, reserve: float = 0.5) -> float:
        return max(0.0, self.end - time.monotonic() - reserve)


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds").replace("+00:00", "Z")


def error_line(stderr: str) -> str | None:
    """The line of a failed command's stderr that says why: a Rust tool's own ``Error: …`` line (py-spy
    under ``RUST_BACKTRACE=1`` follows it with a backtrace whose last line is ``10: main``), else the
    last line before a ``Stack backtrace:``, else the last line; None for no text."""
    lines = [ln.strip() for ln in stderr.split("Stack backtrace:", 1)[0].splitlines() if ln.strip()]
    return next((ln for ln in lines if ln.startswith("Error: ")), lines[-1] if lines else None)


def _run(cmd: list[str], timeout: float, out: Path | None, cap: int = JOURNAL_CAP) -> dict:
    """Run one read-only command, its stdout to ``out`` (at most ``cap`` bytes; ``file`` names it
    only when something was written). Returns the artifact's record: command, start (UTC), duration,
    exit status (as ``exit`` and ``status``), bytes, error (``error_line`` of stderr, a timeout, the
    command missing)."""
    rec: dict = {"command": cmd, "started": _iso(_now()), "file": None}
    t0 = time.monotonic()
    if timeout <= 0:
        rec |= {"exit": None, "status": None, "duration_ms": 0.0, "bytes": 0}
        return rec | {"error": "not run: the budget was spent"}
    try:
        r = subprocess.run(cmd, check=False, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        data, code, err = r.stdout, r.returncode, r.stderr.decode(errors="replace")
        error = (error_line(err) or f"exit status {code}") if code else None
    except subprocess.TimeoutExpired as e:
        data, code, error = e.stdout or b"", None, f"timed out after {timeout:.3g} s"
    except OSError as e:
        data, code, error = b"", None, f"{cmd[0]}: {e.strerror or e}"
    rec["duration_ms"] = round((time.monotonic() - t0) * 1000, 3)
    if len(data) > cap:
        data, rec["truncated"] = data[:cap], f"cut at {cap:,} bytes"
    if out is not None and data:
        out.write_bytes(data)
        rec["file"] = (
            out.relative_to(out.parent.parent).as_posix() if out.parent.name in SUBFOLDERS else out.name
        )
    rec |= {"exit": code, "status": code, "bytes": len(data), "error": error}
    return rec


def _dump(p: Process, round_no: int, folder: Path, pyspy: str, native: bool, timeout: float) -> dict:
    """One ``py-spy dump`` of ``p``: the artifact record with its capture time (when py-spy started,
    UTC) and duration; on failure its reason and the fix."""
    name = f"pyspy/round{round_no}-pid{p.pid}.txt"
    cmd = [pyspy, "dump", "--pid", str(p.pid)] + (["--native"] if native else [])
    rec = _run(cmd, timeout, folder / name)
    rec |= {"kind": "pyspy", "round": round_no, "pid": p.pid, "title": p.title, "unit": p.unit}
    rec["captured_at"] = rec["started"]
    err = rec["error"] or ""
    if rec["exit"] == 0 and rec["bytes"]:
        rec["error"] = None
    elif rec["exit"] is None and err.startswith(f"{pyspy}: "):  # py-spy itself could not be started
        rec["fix"] = "install py-spy (pip install py-spy) or give its path with --py-spy"
    elif re.search(r"permission denied|operation not permitted|EPERM", err, re.I):
        rec["fix"] = PTRACE_FIX
    elif rec["exit"] == 0:
        rec["error"] = "py-spy printed nothing"
    return rec


def _ask(url: str, folder: Path, index: int, timeout: float) -> dict:
    """GET one endpoint: status, latency (ms), bytes, error (a timeout says after how long). The
    answer's body is kept in ``endpoints/``."""
    rec: dict = {"kind": "endpoint", "url": url, "started": _iso(_now()), "timeout_s": round(timeout, 3)}
    t0 = time.monotonic()
    status, body, error = None, b"", None
    try:
        with urllib.request.urlopen(urllib.request.Request(url), timeout=timeout) as r:
            status, body = r.status, r.read(BODY_CAP)
    except urllib.error.HTTPError as e:
        status, body, error = e.code, e.read(BODY_CAP), f"HTTP {e.code} {e.reason}"
    except TimeoutError:
        error = f"timed out after {timeout:.3g} s"
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        said = getattr(reason, "strerror", None) or str(reason)
        error = f"timed out after {timeout:.3g} s" if isinstance(reason, TimeoutError) else said
    took = round((time.monotonic() - t0) * 1000, 3)
    rec |= {"status": status, "latency_ms": took, "duration_ms": took, "bytes": len(body)}
    rec["error"] = error
    if body:
        rec["file"] = f"endpoints/{index:02d}-{re.sub(r'[^A-Za-z0-9]+', '_', url.split('://')[-1])[:80]}.txt"
        (folder / rec["file"]).write_bytes(body)
    return rec


def default_urls(processes: list[Process]) -> list[str]:
    """Base URLs to ask when none are given: ``http://127.0.0.1:PORT`` of every port the HTTP
    servers and routers listen on (loopback only)."""
    ports = sorted({port for p in processes if p.role in COMMANDS for port in p.ports})
    return [f"http://127.0.0.1:{port}" for port in ports]


def _journal(folder: Path, processes, since_s: float, journal_dir: Path | None, left: float) -> list[dict]:
    """The journal of the processes' units over the last ``since_s`` seconds (``journal.export``),
    all units when none is known; the containers' logs (``docker logs``) of those in containers."""
    units = sorted({p.unit for p in processes if p.unit})
    since = _now() - timedelta(seconds=since_s)
    if journal_dir is not None or shutil.which("journalctl"):
        cmd = ["journalctl", "-o", "export", "--no-pager", f"--since=@{since.timestamp():.0f}"]
        cmd += [f"--directory={journal_dir}"] if journal_dir else []
        cmd += [a for u in units for a in ("-u", u)]
        rec = _run(cmd, left, folder / "journal.export") | {"kind": "journal", "units": units}
        if rec["exit"] == 0 and not rec["bytes"]:  # journald not persistent, or nothing of the units
            rec["error"] = f"empty: journalctl gave no entry since {_iso(since)}" + (
                f" of {', '.join(units)}" if units else ""
            )
        recs = [rec]
    else:
        recs = [
            {"kind": "journal", "command": None, "started": _iso(_now()), "file": None, "exit": None,
             "status": None, "duration_ms": 0.0, "bytes": 0, "error": "journalctl not found"}
        ]  # fmt: skip
    for cid in sorted({p.container for p in processes if p.container}):
        if shutil.which("docker"):
            cmd = ["docker", "logs", "--timestamps", f"--since={since.strftime('%Y-%m-%dT%H:%M:%SZ')}", cid]
            recs.append(_run(cmd, left, folder / f"containers/{cid[:12]}.log") | {"kind": "container_log"})
    return recs


def _host_state(folder: Path, left) -> list[dict]:
    """``nvidia-smi -q``, the kernel's Xid lines (``dmesg``), ``python -m sglang.check_env``: those
    whose tool is present."""
    recs = []
    if shutil.which("nvidia-smi"):
        recs.append(_run(["nvidia-smi", "-q"], min(20, left()), folder / "nvidia-smi.txt") | {"kind": "gpu"})
    if shutil.which("dmesg"):
        rec = _run(["dmesg", "--time-format=iso"], min(10, left()), folder / "dmesg.txt") | {"kind": "kernel"}
        if rec["error"]:
            rec["fix"] = (
                "dmesg is restricted to root (kernel.dmesg_restrict=1): run as root for the Xid lines"
            )
        recs.append(rec)
        if rec["bytes"]:  # the GPU's errors (NVRM: Xid …), read by ingest; the whole ring stays in dmesg.txt
            text = (folder / "dmesg.txt").read_text(errors="replace").splitlines()
            xid = "".join(ln + "\n" for ln in text if "NVRM: Xid" in ln)
            recs.append({"kind": "xid", "command": rec["command"], "started": rec["started"], "exit": 0,
                         "status": 0, "duration_ms": 0.0, "bytes": len(xid.encode()), "error": None,
                         "file": "xid.txt" if xid else None})  # fmt: skip
            if xid:
                (folder / "xid.txt").write_text(xid)
    if importlib.util.find_spec("sglang") is not None:
        cmd = [sys.executable, "-m", "sglang.check_env"]
        recs.append(_run(cmd, min(60, left()), folder / "check_env.txt") | {"kind": "check_env"})
    return recs


def _machine() -> dict:
    def read(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None

    return {
        "host": socket.gethostname(),
        "machine_id": read("/etc/machine-id"),
        "boot_id": (read("/proc/sys/kernel/random/boot_id") or "").replace("-", "") or None,
    }


def collect(
    out: Path,
    *,
    since: str = "30m",
    urls: list[str] | None = None,
    rounds: int = 2,
    interval: str = "5s",
    budget: str = "120s",
    timeout: str = "5s",
    native: bool = False,
    journal_dir: Path | None = None,
    pyspy: str = "py-spy",
    archive: bool = False,
    proc: Path = Path("/proc"),
) -> dict:
    """Collect this host's evidence into the folder ``out`` (created; it must not exist or be empty).

    Args:
        since: the journal window, a span back from now (``30m``).
        urls: base URLs of the engines and the router (``http://10.0.0.5:30000``); by default
            ``default_urls`` (loopback, the ports the processes listen on). Each is asked
            ``ENDPOINTS``, all at once, each with ``timeout``.
        rounds, interval: py-spy rounds of every scheduler (all of a round at once), this far apart.
        budget: the whole run's bound; a step the budget no longer allows is recorded as not run.
        native: ``py-spy dump --native`` (C/C++ frames too; slower).
        journal_dir: a journal folder to read instead of the system journal (``journalctl -D``).
        pyspy: the py-spy executable. archive: also write ``out.tar.gz``.
        proc: where the process table is (``/proc``).

    Returns:
        The manifest (also written to ``out/manifest.json``): host, machine id, boot id, start and
        end (ISO UTC), the processes found, and one record per artifact (command or URL, exit status
        or HTTP status, duration/latency in ms, bytes, error, fix).

    Raises:
        CollectError: a span cannot be read, ``rounds`` < 1, or ``out`` exists and is not empty.
    """
    spans = {
        o: parse_span(o, v) for o, v in (("--since", since), ("--interval", interval), ("--budget", budget))
    }
    ask_timeout = parse_span("--timeout", timeout)
    if rounds < 1:
        raise CollectError(f"--rounds {rounds}: at least one round")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CollectError(f"{out}: exists and is not an empty folder (give another -o)")
    left = _Budget(spans["--budget"])
    started = _now()
    for sub in SUBFOLDERS:
        (out / sub).mkdir(parents=True, exist_ok=True)
    processes = find_processes(proc)
    schedulers = [p for p in processes if SCHEDULER.match(p.title)]
    artifacts: list[dict] = []
    targets = [u.rstrip("/") + e for u in (urls if urls else default_urls(processes)) for e in ENDPOINTS]
    with ThreadPoolExecutor(max_workers=max(4, len(schedulers), len(targets))) as pool:
        # the endpoints are asked while the dumps are taken: a slow one costs its timeout once
        asked = [pool.submit(_ask, u, out, i, min(ask_timeout, left.left())) for i, u in enumerate(targets)]
        for r in range(1, rounds + 1):
            if r > 1:
                time.sleep(min(spans["--interval"], left.left()))
            dumps = [pool.submit(_dump, p, r, out, pyspy, native, min(30, left.left())) for p in schedulers]
            artifacts += [f.result() for f in dumps]
        artifacts += _journal(out, processes, spans["--since"], journal_dir, left.left())
        artifacts += _host_state(out, left.left)
        artifacts += [f.result() for f in asked]
    for sub in SUBFOLDERS:
        if not any((out / sub).iterdir()):
            (out / sub).rmdir()
    manifest = {
        "collector": COLLECTOR,
        "version": logcorr.__version__,
        **_machine(),
        "started": _iso(started),
        "ended": _iso(_now()),
        "budget_s": spans["--budget"],
        "since": _iso(started - timedelta(seconds=spans["--since"])),
        "root": os.geteuid() == 0,
        "root_would_add": [] if os.geteuid() == 0 else _root_would_add(),
        "processes": [vars(p) for p in processes],
        "artifacts": artifacts,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if archive:
        with tarfile.open(out.with_name(out.name + ".tar.gz"), "w:gz") as tar:
            tar.add(out, arcname=out.name)
    return manifest


def summary(bundle: Path, manifest: dict) -> str:
    """What ``collect`` wrote, for the terminal: the bundle, the processes found, each step's count,
    each failure with its fix, and what root would add."""
    steps: dict[str, list[int]] = {}
    for a in manifest["artifacts"]:
        steps.setdefault(a["kind"], [0, 0])[a.get("error") is not None] += 1
    lines = [f"wrote {bundle} ({manifest['started']} to {manifest['ended']})"]
    lines.append(
        f"processes: {', '.join(p['title'].split()[0] for p in manifest['processes']) or 'no SGLang process found'}"
    )
    counts = [
        ", ".join([f"{ok} ok"] * bool(ok) + [f"{bad} failed"] * bool(bad)) for ok, bad in steps.values()
    ]
    lines.append("steps: " + ", ".join(f"{k} {n}" for k, n in zip(steps, counts, strict=True)))
    for a in manifest["artifacts"]:
        if a.get("error"):
            what = a.get("url") or a.get("title") or " ".join(a.get("command") or [a["kind"]])
            lines.append(
                f"  {a['kind']} {what}: {a['error']}" + (f" (fix: {a['fix']})" if a.get("fix") else "")
            )
    if manifest["root_would_add"]:
        lines.append("as root this would add: " + "; ".join(manifest["root_would_add"]))
    lines.append(f"read it with: logcorr ingest {bundle}")
    return "\n".join(lines)


def _root_would_add() -> list[str]:
    return [
        "py-spy dumps of processes of other users (ptrace needs CAP_SYS_PTRACE)",
        "the ports of processes of other users (their open files in /proc/PID/fd)",
        "the kernel's Xid lines (dmesg) when kernel.dmesg_restrict is set",
        "the system journal when this user is not in the systemd-journal group",
    ]
