"""Docker and Kubernetes logs (issue 19): the sample incident written out as Docker json-file logs
of three compose services, as CRI logs of three pods and as ``kubectl logs --timestamps --prefix``
text gives the report answers the journal gives; partial lines are joined; a node's folder ingests
the SGLang pods only.

The inputs are built here from the sample's own journal lines (``sample_logs/journal.json``): each
unit's ``MESSAGE``s in journal order, with the journal's receive time as the runtime's time. What a
container runtime does not see is left out: systemd's own messages about the units and the
``_PID`` of each line (a container's stdout carries neither).
"""

from __future__ import annotations

import functools
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis import saved
from logcorr.cli import app
from logcorr.ingest import ingest
from logcorr.inputs import containers, envelopes
from logcorr.inputs import text as text_reader
from logcorr.inputs.sniff import sniff_bytes
from logcorr.inputs.source import ReadOptions
from logcorr.render.report import report

# one worker runs the module (pytest-xdist --dist loadgroup): each container form ingested and reported
# once (the forms fixture)
pytestmark = pytest.mark.xdist_group("containers")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs"
SERVICES = {
    "sglang-prefill.service": "prefill",
    "sglang-decode.service": "decode",
    "sglang-router.service": "router",
}
PODS = {"prefill": "sglang-prefill-0", "decode": "sglang-decode-0", "router": "sglang-router-6d9c7b5f4-x2vqz"}
UIDS = {
    "prefill": "0f6e1c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6",
    "decode": "1a2b3c4d-5e6f-4a8b-9c0d-e1f2a3b4c5d6",
    "router": "2b3c4d5e-6f7a-4b9c-8d0e-f1a2b3c4d5e6",
}
CONTAINER_IDS = {s: f"{i + 1:x}" * 64 for i, s in enumerate(("prefill", "decode", "router"))}
PREFILL_BATCH = (
    "Prefill batch, #new-seq: 1, #new-token: 1473, #cached-token: 0, token usage: 0.00, #running-req: 0, "
    "#queue-req: 0, #prealloc-req: 0, #inflight-req: 0, input throughput (token/s): 0.00, cuda graph: False"
)
SPLIT = 300  # lines longer than this are written in parts (Docker: without "\n"; CRI: P … F)


def _rfc3339(us: int, nanos: str = "789") -> str:
    t = datetime.fromtimestamp(us // 1_000_000, UTC)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{us % 1_000_000:06d}{nanos}Z"


def sample_lines() -> dict[str, list[tuple[int, str, int]]]:
    """Per service (prefill, decode, router): ``(receive time µs, line, run)`` in journal order; run 1
    from the unit's restart (systemd's ``Started`` message after its ``Stopping``) on."""
    if not (SAMPLE / "journal.json").exists():
        pytest.skip("sample_logs not built")
    entries = [json.loads(line) for line in (SAMPLE / "journal.json").read_text().splitlines()]
    restart = {}
    for e in entries:
        about = SERVICES.get(e.get("UNIT", ""))
        if about and e["MESSAGE"].startswith("Started ") and about not in restart:
            stops = [x for x in entries if x.get("UNIT") == e["UNIT"] and x["MESSAGE"].startswith("Stopping")]
            if stops:
                restart[about] = int(e["__REALTIME_TIMESTAMP"])
    out: dict[str, list] = {s: [] for s in SERVICES.values()}
    for e in entries:
        service = SERVICES.get(e.get("_SYSTEMD_UNIT", ""))
        if service:
            us = int(e["__REALTIME_TIMESTAMP"])
            out[service].append((us, e["MESSAGE"], int(us >= restart.get(service, 1 << 62))))
    return out


def _parts(line: str) -> list[str]:
    return (
        [line[i : i + SPLIT // 2] for i in range(0, len(line), SPLIT // 2)] if len(line) > SPLIT else [line]
    )


def write_docker(root: Path, lines: dict) -> Path:
    """``root/containers/<id>/<id>-json.log`` and ``config.v2.json`` per compose service."""
    for service, rows in lines.items():
        cid = CONTAINER_IDS[service]
        folder = root / "containers" / cid
        folder.mkdir(parents=True)
        runs = [us for us, _, run in rows if run == 1]
        started = _rfc3339(min(runs) - 500_000) if runs else _rfc3339(rows[0][0] - 2_000_000)
        config = {
            "ID": cid,
            "Name": f"/sglang-pd-{service}-1",
            "State": {"Running": True, "StartedAt": started},
            "Config": {
                "Labels": {"com.docker.compose.service": service, "com.docker.compose.project": "sglang-pd"}
            },
        }
        (folder / "config.v2.json").write_text(json.dumps(config))
        (folder / "hostconfig.json").write_text("{}")
        with open(folder / f"{cid}-json.log", "w") as f:
            for us, line, _ in rows:
                parts = _parts(line)
                for i, part in enumerate(parts):
                    end = "\n" if i == len(parts) - 1 else ""
                    f.write(
                        json.dumps(
                            {"log": part + end, "stream": "stdout", "time": _rfc3339(us)},
                            separators=(",", ":"),
                        )
                        + "\n"
                    )
    return root / "containers"


def write_cri(root: Path, lines: dict, extra: bool = False) -> Path:
    """``root/pods/<ns>_<pod>_<uid>/<container>/<run>.log`` per pod, CRI lines; with ``extra``, two
    unrelated pods (coredns, redis) and ``root/containers`` links as a node has them."""
    pods = root / "pods"
    for service, rows in lines.items():
        folder = pods / f"default_{PODS[service]}_{UIDS[service]}" / "sglang"
        folder.mkdir(parents=True)
        files = {}
        for us, line, run in rows:
            f = files.get(run) or files.setdefault(run, open(folder / f"{run}.log", "w"))
            parts = _parts(line)
            for i, part in enumerate(parts):
                f.write(f"{_rfc3339(us)} stdout {'F' if i == len(parts) - 1 else 'P'} {part}\n")
        for f in files.values():
            f.close()
    if extra:
        others = {
            (
                "kube-system",
                "coredns-5d78c9869d-4xk2p",
                "coredns",
            ): '[INFO] 10.244.0.5:51234 - 4242 "A IN example.com. udp" NOERROR',
            (
                "default",
                "redis-0",
                "redis",
            ): "1:M 29 Oct 2025 21:30:00.000 * Background saving started by pid 42",
        }
        for i, ((ns, pod, container), text) in enumerate(others.items()):
            folder = pods / f"{ns}_{pod}_{i}{'c' * 7}-aaaa-bbbb-cccc-{i}{'d' * 11}" / container
            folder.mkdir(parents=True)
            (folder / "0.log").write_text(
                "".join(f"{_rfc3339(1761773100000000 + k * 1_000_000)} stdout F {text}\n" for k in range(50))
            )
        links = root / "containers"
        links.mkdir()
        for log in pods.glob("*/*/*.log"):
            ns, pod, _ = log.parent.parent.name.split("_")
            name = f"{pod}_{ns}_{log.parent.name}-{'e' * 63}{log.stem}.log"
            os.symlink(log, links / name)
    return pods


def write_kubectl(path: Path, lines: dict) -> Path:
    """``kubectl logs --timestamps --prefix`` of the three pods, interleaved by time as ``kubectl logs
    -l app=sglang --prefix --timestamps`` streams them."""
    rows = sorted(
        (us, n, f"[pod/{PODS[s]}/sglang] {_rfc3339(us)} {line}\n")
        for s, found in lines.items()
        for n, (us, line, _) in enumerate(found)
    )
    path.write_text("".join(text for _, _, text in rows))
    return path


# --- issue 31 item 9: the same lines as log platforms export them ---------------------------------------
LABELS = {"container": "sglang", "namespace": "default", "node": "gpu-node-1"}


def _by_time(lines: dict) -> list[tuple[int, str, str]]:
    """``(µs, service, line)`` of every service, by time, as a platform's query answers."""
    return sorted((us, service, line) for service, rows in lines.items() for us, line, _ in rows)


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return path


def write_loki_jsonl(path: Path, lines: dict) -> Path:
    """``logcli query --output=jsonl --forward --limit 0``: labels, line, RFC 3339 timestamp."""
    return _jsonl(
        path,
        (
            {"labels": {"pod": PODS[s], "container": "sglang", "namespace": "default", "node_name": "gpu-node-1"},
             "line": line, "timestamp": _rfc3339(us)}
            for us, s, line in _by_time(lines)
        ),
    )  # fmt: skip


def write_loki_range(path: Path, lines: dict) -> Path:
    """Loki's ``query_range`` answer: a stream per pod, values ``[ns, line]`` newest first (the API's
    default direction)."""
    result = [
        {
            "stream": {"pod": PODS[s], **LABELS},
            "values": [[str(us * 1000), line] for us, line, _ in rows][::-1],
        }
        for s, rows in lines.items()
    ]
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "streams", "result": result}}))
    return path


def write_es_response(path: Path, lines: dict) -> Path:
    """An Elasticsearch search answer of Filebeat's ECS documents (``kubernetes.pod.name``, ``host.name``)."""
    hits = [
        {"_index": "filebeat-8", "_id": str(i), "_score": None,
         "_source": {"@timestamp": _rfc3339(us, ""), "message": line, "host": {"name": "gpu-node-1"},
                     "kubernetes": {"pod": {"name": PODS[s]}, "container": {"name": "sglang"}, "namespace": "default"}}}
        for i, (us, s, line) in enumerate(_by_time(lines))
    ]  # fmt: skip
    doc = {
        "took": 5,
        "timed_out": False,
        "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits},
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_fluent_bit(path: Path, lines: dict) -> Path:
    """Fluent Bit's tail + kubernetes filter without a CRI parser: ``date`` epoch seconds, ``log`` still
    carrying the CRI prefix (long lines in ``P`` parts), ``kubernetes.*_name``."""
    return _jsonl(
        path,
        (
            {"date": us / 1e6,
             "log": f"{_rfc3339(us)} stdout {'F' if i == len(parts) - 1 else 'P'} {part}",
             "kubernetes": {"pod_name": PODS[s], "namespace_name": "default", "container_name": "sglang",
                            "host": "gpu-node-1"}}
            for us, s, line in _by_time(lines)
            for parts in [_parts(line)]
            for i, part in enumerate(parts)
        ),
    )  # fmt: skip


def write_otlp(path: Path, lines: dict) -> Path:
    """The OpenTelemetry collector's ``file`` exporter: an OTLP JSON logs request per line, 100
    records each, the pod in the resource's ``k8s.*`` attributes."""

    def attrs(**kv):
        return [{"key": k, "value": {"stringValue": v}} for k, v in kv.items()]

    requests = []
    for s, rows in lines.items():
        resource = {"attributes": attrs(**{"k8s.pod.name": PODS[s], "k8s.container.name": "sglang",
                                           "k8s.namespace.name": "default", "k8s.node.name": "gpu-node-1"})}  # fmt: skip
        for k in range(0, len(rows), 100):
            records = [
                {"timeUnixNano": str(us * 1000), "observedTimeUnixNano": str(us * 1000 + 5),
                 "body": {"stringValue": line}, "attributes": attrs(**{"log.iostream": "stdout"})}
                for us, line, _ in rows[k : k + 100]
            ]  # fmt: skip
            requests.append(
                {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": records}]}]}
            )
    return _jsonl(path, requests)


def write_victorialogs(path: Path, lines: dict) -> Path:
    """VictoriaLogs' JSON lines: ``_msg``, ``_time``, the pod only in ``_stream``."""
    return _jsonl(
        path,
        (
            {"_msg": line, "_time": _rfc3339(us),
             "_stream": f'{{kubernetes.container_name="sglang",kubernetes.namespace_name="default",kubernetes.pod_name="{PODS[s]}"}}'}
            for us, s, line in _by_time(lines)
        ),
    )  # fmt: skip


def write_vector_journald(path: Path) -> Path:
    """Vector's journald source: the journal's fields kept, the line as ``message``, ``host``, a
    ``timestamp``; the engines' and router's units only."""
    entries = [json.loads(line) for line in (SAMPLE / "journal.json").read_text().splitlines()]
    keep = ("_SYSTEMD_UNIT", "_PID", "_COMM", "SYSLOG_IDENTIFIER", "PRIORITY", "__REALTIME_TIMESTAMP")
    return _jsonl(
        path,
        (
            {**{k: e[k] for k in keep if k in e}, "host": e.get("_HOSTNAME"), "message": e["MESSAGE"],
             "source_type": "journald", "timestamp": _rfc3339(int(e["__REALTIME_TIMESTAMP"]), "")}
            for e in entries
            if e.get("_SYSTEMD_UNIT") in SERVICES
        ),
    )  # fmt: skip


def write_logcli_default(path: Path, lines: dict) -> Path:
    """``logcli query --forward --limit 0`` with its default output: ``<time> {labels} <line>``."""
    path.write_text(
        "".join(
            f'{_rfc3339(us, "")} {{container="sglang", namespace="default", node_name="gpu-node-1", pod="{PODS[s]}"}} {line}\n'
            for us, s, line in _by_time(lines)
        )
    )
    return path


PLATFORM_FORMS = {
    "logcli-default": write_logcli_default,
    "loki-jsonl": write_loki_jsonl,
    "loki-range": write_loki_range,
    "es-response": write_es_response,
    "fluent-bit": write_fluent_bit,
    "otlp-logs": write_otlp,
    "victorialogs": write_victorialogs,
}


def truth(pattern: str) -> str:
    table = (SAMPLE / "README.md").read_text().split("## True answers", 1)[1]
    rows = [
        cells[1]
        for line in table.splitlines()
        if len(cells := [c.strip() for c in line.strip().strip("|").split("|")]) == 2
        and re.search(pattern, cells[0], re.IGNORECASE)
    ]
    assert len(rows) == 1, pattern
    return rows[0]


def ts(text: str) -> datetime:
    found = re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", text)[0]
    return datetime.fromisoformat(found.replace("Z", "+00:00"))


def hms(t: datetime) -> str:
    return t.strftime("%H:%M:%S") + f".{t.microsecond // 1000:03d}"


@pytest.fixture(scope="module")
def lines() -> dict:
    return sample_lines()


@pytest.fixture(scope="module")
def forms(lines, tmp_path_factory) -> dict[str, Path]:
    """Each form ingested (the hand-taken py-spy dumps with it, as for the journal): name → OUT."""
    base = tmp_path_factory.mktemp("forms")
    inputs = {
        "docker": write_docker(base / "docker", lines),
        "cri": write_cri(base / "cri", lines),
        "kubectl": write_kubectl(base / "kubectl.log", lines),
        **{name: write(base / f"{name}.json", lines) for name, write in PLATFORM_FORMS.items()},
        "vector-journald": write_vector_journald(base / "vector.json"),
    }
    outs = {}
    for name, path in inputs.items():
        outs[name] = base / f"out-{name}"
        ingest([path, SAMPLE / "pyspy"], outs[name])
    return outs


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


@functools.cache
def form_report(out: Path) -> str:
    """The report of a form's OUT (``forms``: never written to after it is built), made once: the
    tests below read three sections of it."""
    return report(out)


@pytest.mark.parametrize("form", ["docker", "cri", "kubectl", *PLATFORM_FORMS, "vector-journald"])
def test_container_forms_give_the_journals_answers(forms, form):
    """The room, the prefill ranks that assert, decode wedged on 4 ranks, the divergent groups."""
    verdict = section(form_report(forms[form]), "Verdict")
    room = truth(r"^the room R$").strip("`")
    assert f"room {room}" in verdict
    assertion = ts(truth(r"^assertion on prefill TP0"))
    assert (
        f"`assert room in self.transfer_infos` on prefill TP0, TP1, TP3 at {assertion:%Y-%m-%d} {hms(assertion)}"
        in verdict
    )
    stop = min(ts(truth(f"last decode batch, decode TP{tp}")) for tp in range(4))
    assert (
        f"**Decode wedged** at {stop:%Y-%m-%d} {hms(stop)} UTC: no batch after it on any of its 4 ranks"
        in verdict
    )
    assert (
        "**TP desync in decode**" in verdict
        and "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3" in verdict
    )
    burst = truth(r"first / last abort line of any kind")
    assert f"**Abort burst** from {ts(burst):%Y-%m-%d} {hms(ts(burst))} UTC" in verdict
    leaks, answers = re.search(r"(\d+) of (\d+) answers", (SAMPLE / "README.md").read_text()).groups()
    markup = section(form_report(forms[form]), "Answers with tool-call markup")
    assert (
        f"**{leaks} of {answers} answers**" in markup
    )  # a pod has no host: its bands are found all the same


@pytest.mark.parametrize("form", ["docker", "cri", "kubectl"])
def test_container_forms_find_the_journals_restart(forms, lines, form):
    """Container logs hold no systemd message; the restart is dated, as in the journal, from the old
    run going down: decode's HTTP server printing "Shutting down" before its new run starts. The
    journal says 21:40:45 (systemd's ``Stopping``, 3.3 ms earlier); every form says the same second."""
    shutdown = min(
        us for us, line, run in lines["decode"] if run == 0 and line.endswith("INFO:     Shutting down")
    )
    issued = ts(truth(r"^restart issued"))
    wedge = saved.query(forms[form], "wedge").filter(pl.col("role") == "decode")
    restart = wedge["restart_ts"][0]
    assert restart is not None and int(restart.timestamp() * 1e6) == shutdown
    assert f"{restart:%Y-%m-%d %H:%M:%S}" == f"{issued:%Y-%m-%d %H:%M:%S}" == "2025-10-29 21:40:45"
    assert 0 < (restart - issued).total_seconds() < 0.01
    verdict = section(form_report(forms[form]), "Verdict")
    assert f"the restart came at {restart:%Y-%m-%d} {hms(restart)} UTC" in verdict


def test_kubectl_text_without_the_servers_words_cannot_tell_the_restart(lines, tmp_path):
    """Without uvicorn's stop and start lines, ``kubectl logs`` text does not say where a container's
    run ended: no restart is claimed."""
    quiet = {
        s: [row for row in rows if "server process [" not in row[1] and not row[1].endswith("Shutting down")]
        for s, rows in lines.items()
    }
    ingest([write_kubectl(tmp_path / "kubectl.log", quiet), SAMPLE / "pyspy"], tmp_path / "out")
    verdict = section(report(tmp_path / "out"), "Verdict")
    assert "no restart was read" in verdict


@pytest.mark.parametrize("form", ["docker", "cri", "kubectl"])
def test_container_forms_units_roles_times(forms, lines, form):
    ev = pl.read_parquet(forms[form] / "events" / "**" / "*.parquet")
    units = dict(
        ev.filter(pl.col("unit").is_not_null())
        .group_by("unit")
        .agg(pl.col("role").mode().first())
        .iter_rows()
    )
    want = (
        {"prefill": "prefill", "decode": "decode", "router": "router"}
        if form == "docker"
        else {f"{PODS[s]}/sglang": s for s in PODS}
    )
    assert units == want
    # ts is the runtime's time cut to µs, log_ts the printed one
    tb = ev.filter(
        pl.col("message").str.contains("Unexpected transfer worker error") & (pl.col("tp_rank") == 0)
    )
    assert tb["ts"][0] == ts(truth(r"^assertion on prefill TP0"))
    assert tb["log_ts"][0] == datetime(2025, 10, 29, 21, 34, 43)
    # a traceback is one record
    trace = ev.filter(
        pl.col("message").str.starts_with("Traceback") | pl.col("message").str.contains("\nTraceback")
    )
    assert trace.height >= 3 and (trace["n_lines"] >= 4).all()
    # the long lines written in parts are whole again
    long = {line for rows in lines.values() for _, line, _ in rows if len(line) > SPLIT}
    firsts = set(ev["message"].str.split("\n").list.first())
    assert long and long <= firsts


def _ingest_text(tmp_path: Path, name: str, text: str) -> pl.DataFrame:
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / f"out-{name}"
    ingest([path], out)
    return pl.read_parquet(out / "events" / "**" / "*.parquet").sort("event_id")


def test_docker_16k_split_line_and_traceback_are_one_record_each(tmp_path):
    big = "[2025-10-29 21:30:00 TP0] " + "x" * 40_000
    pieces = [big[i : i + 16384] for i in range(0, len(big), 16384)]
    rows = [
        {"log": p, "stream": "stdout", "time": f"2025-10-29T21:30:00.00000{i}123Z"}
        for i, p in enumerate(pieces)
    ]
    rows[-1]["log"] += "\n"
    trace = [
        "[2025-10-29 21:30:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/scheduler.py", line 10, in run',
        "    loop()",
        "AssertionError",
    ]
    rows += [{"log": t + "\n", "stream": "stderr", "time": "2025-10-29T21:30:01.000001999Z"} for t in trace]
    ev = _ingest_text(tmp_path, "abc-json.log", "".join(json.dumps(r) + "\n" for r in rows))
    assert ev.height == 2
    assert ev["message"][0] == big and ev["n_lines"][0] == 1
    assert ev["ts"][0] == datetime(2025, 10, 29, 21, 30, 0, 0, UTC)  # the first part's, ns cut
    assert ev["message"][1] == "\n".join(trace) and ev["n_lines"][1] == 4
    assert ev["ts"][1] == datetime(2025, 10, 29, 21, 30, 1, 1, UTC)


def test_cri_partial_lines_are_one_record(tmp_path):
    text = (
        "2025-10-29T21:30:00.000000001Z stdout P [2025-10-29 21:30:00 TP1] Prefill batch. #new-seq: 1, \n"
        "2025-10-29T21:30:00.000000002Z stderr F [2025-10-29 21:30:00 TP1] other stream between the parts\n"
        "2025-10-29T21:30:00.000000003Z stdout P #new-token: 8, \n"
        "2025-10-29T21:30:00.000000004Z stdout F #cached-token: 0\n"
        "not a CRI line at all\n"
    )
    ev = _ingest_text(tmp_path, "0.log", text)
    joined = "[2025-10-29 21:30:00 TP1] Prefill batch. #new-seq: 1, #new-token: 8, #cached-token: 0"
    assert ev["message"].to_list()[:2] == [joined, "[2025-10-29 21:30:00 TP1] other stream between the parts"]
    assert ev["kind"][0] == "batch" and ev["tp_rank"][0] == 1
    assert ev["message"][2] == "not a CRI line at all"  # an unknown line is kept
    assert ev["source_pos"].to_list() == ["line 1", "line 2", "line 5"]


def test_partial_line_across_chunks(monkeypatch, tmp_path):
    monkeypatch.setattr(text_reader, "CHUNK_BYTES", 256)
    parts = [f"2025-10-29T21:30:00.{i:09d}Z stdout P {'y' * 60}\n" for i in range(10)]
    text = "".join(parts) + "2025-10-29T21:30:01.000000000Z stdout F end\n"
    ev = _ingest_text(tmp_path, "1.log", text * 3)
    assert ev.height == 3 and (ev["message"] == "y" * 600 + "end").all()


def test_sniffing_the_forms():
    cri = "2025-10-29T21:30:00.123456789Z stdout F [2025-10-29 21:30:00 TP0] x"
    kubectl = "2025-10-29T21:30:00.123456789Z [2025-10-29 21:30:00 TP0] x"
    prefixed = "[pod/sglang-decode-0/sglang] " + kubectl
    stern = "sglang-decode-0 sglang [2025-10-29 21:30:00 TP0] Decode batch. #running-req: 1"
    docker = '{"log":"[2025-10-29 21:30:00 TP0] x\\n","stream":"stdout","time":"2025-10-29T21:30:00.1Z"}'
    loki = '{"labels":{"pod":"sglang-decode-0","container":"sglang"},"line":"x","timestamp":"2025-10-29T21:30:00Z"}'
    app_json = '{"timestamp":"2025-10-29 21:49:19","level":"INFO","message":"m"}'
    for text, fmt in [
        (cri, "cri"),
        (kubectl, "kubectl"),
        (prefixed, "kubectl"),
        (stern, "stern"),
        (docker, "docker-json"),
        (loki, "log-export"),
        (app_json, "text"),
    ]:
        assert sniff_bytes(((text + "\n") * 3).encode()) == fmt, text


def test_stern_and_log_export(tmp_path):
    stern = (
        "".join(
            f"sglang-decode-0 sglang 2025-10-29T21:30:0{i}.5Z [2025-10-29 21:30:0{i} TP{i % 2}] Decode batch. "
            f"#running-req: 1, #token: 10, token usage: 0.00, gen throughput (token/s): 1.0, #queue-req: 0\n"
            for i in range(4)
        )
        + "coredns-5d78c9869d-4xk2p coredns 2025-10-29T21:30:00Z [INFO] plugin/reload: Running\n"
    )
    ev = _ingest_text(tmp_path, "stern.txt", stern)
    assert set(ev["unit"]) == {"sglang-decode-0/sglang"} and set(ev["role"]) == {"decode"}
    assert ev["ts"][0] == datetime(2025, 10, 29, 21, 30, 0, 500000, UTC)
    export = "".join(
        json.dumps(
            {
                "labels": {"pod": "llm-b-0", "container": "engine", "node_name": "gpu-node-7"},
                "line": f"[2025-10-29 21:30:0{i} TP0] {PREFILL_BATCH}",
                "timestamp": f"176177340{i}000000000",
            }
        )
        + "\n"
        for i in range(3)
    )
    ev = _ingest_text(tmp_path, "export.jsonl", export)
    assert set(ev["unit"]) == {"llm-b-0/engine"} and set(ev["host"]) == {"gpu-node-7"}
    assert set(ev["role"]) == {"prefill"}  # by the line's content: the pod's name says nothing
    assert ev["ts"][0] == datetime.fromtimestamp(1761773400, UTC)


def test_node_folder_ingests_sglang_pods_only(lines, tmp_path):
    root = tmp_path / "node"
    write_cri(root, lines, extra=True)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["ingest", str(root), "-o", str(out)])
    assert result.exit_code == 0, result.output
    skipped = [line for line in result.output.splitlines() if "pods skipped" in line]
    assert len(skipped) == 1 and "coredns" in skipped[0] and "redis-0" in skipped[0], result.output
    ev = pl.read_parquet(out / "events" / "**" / "*.parquet")
    assert set(ev["unit"].drop_nulls()) == {f"{PODS[s]}/sglang" for s in PODS}
    assert "pods chosen: sglang-decode-0/sglang (decode)" in result.output
    # the links of /var/log/containers are the same files: read once
    assert ev.filter(pl.col("message").str.contains("Unexpected transfer worker error")).height == 3


def test_role_option_and_unit_option_for_pods(tmp_path):
    text = "".join(
        f"[pod/llm-a-0/engine] 2025-10-29T21:30:0{i}.000000001Z [2025-10-29 21:30:0{i} TP0] Load weight begin.\n"
        f"[pod/web-0/nginx] 2025-10-29T21:30:0{i}.000000002Z 10.0.0.1 - - GET / 200\n"
        for i in range(3)
    )
    path = tmp_path / "k.log"
    path.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["ingest", str(path), "-o", str(out), "--role", "llm-a-0=prefill"])
    assert result.exit_code == 0, result.output
    assert "pods chosen: llm-a-0/engine (prefill)" in result.output
    assert "pods skipped: web-0/nginx (3 lines)" in result.output
    ev = pl.read_parquet(out / "events" / "**" / "*.parquet")
    assert set(ev["role"]) == {"prefill"} and set(ev["unit"]) == {"llm-a-0/engine"}
    result = CliRunner().invoke(app, ["ingest", str(path), "-o", str(out), "--unit", "web-*"])
    assert result.exit_code == 0, result.output
    assert set(pl.read_parquet(out / "events" / "**" / "*.parquet")["unit"]) == {"web-0/nginx"}


def test_since_until_apply_to_container_logs(lines, tmp_path):
    pods = write_cri(tmp_path / "cri", lines)
    out = tmp_path / "out"
    ingest([pods], out, ReadOptions(since="2025-10-29 21:34:00", until="2025-10-29 21:35:00"))
    ev = pl.read_parquet(out / "events" / "**" / "*.parquet")
    assert ev.height and ev["ts"].min() >= datetime(2025, 10, 29, 21, 34, tzinfo=UTC)
    assert ev["ts"].max() <= datetime(2025, 10, 29, 21, 35, tzinfo=UTC)


def test_bad_container_input_never_raises():
    for fmt in containers.FORMATS:
        df = envelopes.parse_lines(pl.Series(["", "{", "garbage", '{"log":1}', "\x00"]), fmt)
        assert df.height == 5 and df["text"].null_count() == 0


def test_platform_exports_are_known_by_content(forms, tmp_path):
    """Issue 31 item 9: each platform's export is read as what it is (``sources.format``), every line
    of the journal's three units kept (5,954 records, as from the journal), each pod or unit with its
    role, the node named where the export names it (VictoriaLogs' ``_stream`` here names none)."""
    expected = {
        "logcli-default": "kubectl",
        "loki-jsonl": "log-export", "loki-range": "loki-range", "es-response": "es-response",
        "fluent-bit": "log-export", "otlp-logs": "otlp-logs", "victorialogs": "log-export",
        "vector-journald": "log-export",
    }  # fmt: skip
    for form, fmt in expected.items():
        src = pl.read_parquet(next((forms[form] / "sources").glob("**/*.parquet")))
        got = src.filter(pl.col("source").str.ends_with(".json"))
        assert got["format"].to_list() == [fmt], form
        assert got["records"].to_list() == [5954], form
        units = (
            saved.connect(forms[form])
            .execute(
                "SELECT unit, role, any_value(host), count(DISTINCT pid) FROM events "
                "WHERE source LIKE '%.json' GROUP BY ALL ORDER BY role"
            )
            .fetchall()
        )
        host = None if form == "victorialogs" else "gpu-node-1"
        if form == "vector-journald":  # the journal's fields kept: units and each rank's process
            assert units == [
                ("sglang-decode.service", "decode", host, 10),
                ("sglang-prefill.service", "prefill", host, 10),
                ("sglang-router.service", "router", host, 1),
            ]
        else:
            assert [u[:3] for u in units] == [
                (f"{PODS[r]}/sglang", r, host) for r in ("decode", "prefill", "router")
            ], form


def test_a_newest_first_export_is_read_oldest_first_and_said(lines, tmp_path):
    """logcli without ``--forward`` answers newest first (and only 30 lines without ``--limit``):
    the lines are read oldest first, so tracebacks join and the answers hold, and the note says so."""
    forward = write_loki_jsonl(tmp_path / "loki.json", lines).read_text().splitlines()
    (tmp_path / "back.json").write_text("\n".join(reversed(forward)) + "\n")
    ingest([tmp_path / "back.json"], tmp_path / "out")
    src = pl.read_parquet(next((tmp_path / "out" / "sources").glob("**/*.parquet")))
    assert src["records"].to_list() == [5954]
    assert "lines newest first (Loki's logcli answers so without --forward" in src["notes"][0]
    verdict = section(report(tmp_path / "out"), "Verdict")
    assert "**Decode wedged** at 2025-10-29 21:34:47.412 UTC" in verdict
    (tmp_path / "last30.json").write_text("\n".join(reversed(forward[-30:])) + "\n")
    ingest([tmp_path / "last30.json"], tmp_path / "out30")
    src = pl.read_parquet(next((tmp_path / "out30" / "sources").glob("**/*.parquet")))
    assert "only the newest 30 lines without --limit" in src["notes"][0]


def test_a_document_cut_short_keeps_what_parses(lines, tmp_path):
    """An OTLP export whose last request is cut: the requests before it are read, the cut is named."""
    text = write_otlp(tmp_path / "otlp.json", lines).read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) - 5000])
    ingest([cut], tmp_path / "out")
    src = pl.read_parquet(next((tmp_path / "out" / "sources").glob("**/*.parquet")))
    assert src["format"].to_list() == ["otlp-logs"]
    assert 5800 < src["records"][0] < 5954
    assert "is not JSON" in src["errors"][0] and "the rest is not read" in src["errors"][0]


DYNAMO_LINE = (
    '{"time":"2025-10-31T21:06:45.418584Z","level":"DEBUG","file":"/opt/dynamo/lib/llm/src/kv_router/'
    'prefill_router.rs","line":232,"target":"dynamo_llm::kv_router::prefill_router","message":"Prefill succeeded,'
    ' using disaggregated params for decode","method":"POST","span_id":"f7e487a9d2a6bf38","span_name":'
    '"http-request","trace_id":"80196f3e3a6fdf06d23bb9ada3788518","uri":"/v1/chat/completions","version":'
    '"HTTP/1.1","x_request_id":"8372eac7-5f43-4d76-beca-0a94cfb311d0"}'
)  # Dynamo's DYN_LOGGING_JSONL=true (docs/observability/logging.md)


def test_dynamo_json_lines_keep_their_time_level_and_request_id_and_a_line_number_is_no_line(tmp_path):
    path = tmp_path / "frontend.jsonl"
    path.write_text(
        DYNAMO_LINE + "\n" + DYNAMO_LINE.replace("45.418584Z", "47.5Z").replace("DEBUG", "WARN") + "\n"
    )
    ingest([path], tmp_path / "out")
    ev = saved.query(tmp_path / "out", "SELECT ts, level, message FROM events ORDER BY ts")
    assert ev["ts"].to_list() == [
        datetime(2025, 10, 31, 21, 6, 45, 418584, tzinfo=UTC),
        datetime(2025, 10, 31, 21, 6, 47, 500000, tzinfo=UTC),
    ]
    assert ev["level"].to_list() == ["DEBUG", "WARNING"] and ev["message"][0] == DYNAMO_LINE
    req = saved.query(tmp_path / "out", "SELECT method, path, request_id FROM requests")
    assert req.rows()[0] == ("POST", "/v1/chat/completions", "8372eac7-5f43-4d76-beca-0a94cfb311d0")
    # beside a wrapped record, a "line": 232 is a source line number, never the log line
    mixed = tmp_path / "mixed.jsonl"
    wrapped = (
        '{"time":"2025-10-31T21:06:46Z","message":"[2025-10-31 21:06:46 TP3] Prefill batch. #new-seq: 1"}'
    )
    mixed.write_text(DYNAMO_LINE + "\n" + wrapped + "\n")
    ingest([mixed], tmp_path / "mixed")
    ev = saved.query(tmp_path / "mixed", "SELECT message FROM events ORDER BY ts")
    assert ev["message"].to_list()[0] == "Prefill succeeded, using disaggregated params for decode"


def test_a_cluster_info_dump_gives_each_section_its_pod_and_container(tmp_path):
    folder = tmp_path / "dump" / "default" / "sglang-decode-0"
    folder.mkdir(parents=True)
    batch = (
        "[2026-08-04 11:58:40 DP0 TP0] Decode batch. #running-req: 12, #token: 4000, token usage: 0.05, "
        "gen throughput (token/s): 900.00, #queue-req: 0,"
    )
    failed = (
        "[2026-08-04 11:58:41 DP0 TP1] Decode transfer failed for request rank=1 decode_req.req.rid='abc' "
        "decode_req.req.bootstrap_room=12345 with exception KVTransferError(bootstrap_room=12345): "
        "Failed to get kvcache from prefill instance, it might be dead"
    )

    def section(container: str, *lines: str) -> str:
        edge = "logs for container {} of pod default/sglang-decode-0 ===="
        return "\n".join(
            [f"==== START {edge.format(container)}", *lines, f"==== END {edge.format(container)}"]
        )

    (folder / "logs.txt").write_text(
        section("sglang", batch, failed) + "\n" + section("sidecar", "ready") + "\n"
    )
    assert sniff_bytes((folder / "logs.txt").read_bytes()) == "cluster-dump"
    ingest([tmp_path / "dump"], tmp_path / "out")
    ev = saved.query(
        tmp_path / "out", "SELECT unit, role, kind, tp_rank, source_pos FROM events ORDER BY source_pos"
    )
    assert ev.rows() == [
        ("sglang-decode-0/sglang", "decode", "batch", 0, "line 2"),
        ("sglang-decode-0/sglang", "decode", "transfer_error", 1, "line 3"),
        ("sglang-decode-0/sidecar", "decode", "other", None, "line 6"),
    ]
    # a section cut by the reader's chunks keeps its names: the reader carries the open section over
    lines = pl.Series(["==== START logs for container c of pod ns/p ====", "a"])
    df, open_section = containers._in_sections(envelopes.parse_lines(lines, "cluster-dump"), None)
    assert df.select("pod", "container", "namespace", "text").rows() == [("p", "c", "ns", "a")]
    df, open_section = containers._in_sections(
        envelopes.parse_lines(pl.Series(["b"]), "cluster-dump"), open_section
    )
    assert df.select("pod", "text").rows() == [("p", "b")] and open_section["container"] == "c"
