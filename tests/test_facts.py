"""The ``facts`` table (parsers/facts.py): the key/value facts a component's informational records
state, read by the shape of the clause, whatever the component; and what is never a fact."""

from __future__ import annotations

import pytest

from logcorr.ingest import records_from_text
from logcorr.parsers.facts import facts, line_facts, number_and_unit


def _rows(text: str) -> list[tuple]:
    got = facts(records_from_text(text))
    return got.select(
        "source_pos", "tp_rank", "pid", "statement", "key", "value", "number", "value_unit"
    ).rows()


def test_sglang_start_up_lines_give_their_figures_per_rank():
    """batch9/02: SGLang's Load weight end / KV Cache is allocated / Capture cuda graph end lines."""
    rows = _rows(
        "[2025-03-10 16:21:21 TP1] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=24.71 GB,"
        " mem usage=14.00 GB.\n"
        "[2025-03-10 16:21:21 TP0] KV Cache is allocated. #tokens: 10240, K size: 0.47 GB, V size: 0.47 GB\n"
        "[2025-03-10 16:21:31 TP1] Registering 2231 cuda graph addresses\n"
        "[2025-03-10 16:21:31 TP0] Capture cuda graph end. Time elapsed: 9.41 s. avail mem=18.57 GB."
        " mem usage=3.38 GB.\n"
    )
    assert rows == [
        ("line 1", 1, None, "Load weight end", "type", "Qwen2ForCausalLM", None, None),
        ("line 1", 1, None, "Load weight end", "dtype", "torch.bfloat16", None, None),
        ("line 1", 1, None, "Load weight end", "avail mem", "24.71 GB", 24.71, "GB"),
        ("line 1", 1, None, "Load weight end", "mem usage", "14.00 GB", 14.0, "GB"),
        ("line 2", 0, None, "KV Cache is allocated", "#tokens", "10240", 10240.0, None),
        ("line 2", 0, None, "KV Cache is allocated", "K size", "0.47 GB", 0.47, "GB"),
        ("line 2", 0, None, "KV Cache is allocated", "V size", "0.47 GB", 0.47, "GB"),
        ("line 3", 1, None, "Registering", "cuda graph addresses", "2231", 2231.0, None),
        ("line 4", 0, None, "Capture cuda graph end", "Time elapsed", "9.41 s", 9.41, "s"),
        ("line 4", 0, None, "Capture cuda graph end", "avail mem", "18.57 GB", 18.57, "GB"),
        ("line 4", 0, None, "Capture cuda graph end", "mem usage", "3.38 GB", 3.38, "GB"),
    ]


def test_glog_configuration_lines_of_mooncake_and_nixl():
    """batch9/16 and 17: Mooncake's Transfer Engine and NIXL's UCX config, glog INFO lines."""
    rows = _rows(
        "I20250519 11:37:43.163743  1480 transfer_engine.cpp:44] Transfer Engine starting. Server: 127.0.0.1,"
        " Metadata: P2PHANDSHAKE, ip_or_host_name: , rpc_port: 0\n"
        "I20250519 11:37:43.163780  1480 transfer_engine.cpp:100] Transfer Engine RPC using P2P handshake,"
        " listening on 127.0.0.1:15317\n"
        "I20250519 11:37:43.165282  1480 transfer_engine.cpp:127] Topology discovery complete. Found 8 HCAs.\n"
        "I0801 15:40:05.041813    1049 nixl_plugin_manager.cpp:316] Discovered and loaded plugin: UCX\n"
        "I0801 15:40:05.042222    1049 config.cpp:43] Modified UCX config: RNDV_THRESH=inf\n"
    )
    assert [r[3:6] for r in rows] == [
        ("Transfer Engine starting", "Server", "127.0.0.1"),
        ("Transfer Engine starting", "Metadata", "P2PHANDSHAKE"),
        ("Transfer Engine starting", "rpc_port", "0"),
        ("Transfer Engine RPC using P2P handshake", "listening on", "127.0.0.1:15317"),
        ("Found", "HCAs", "8"),
        (None, "Discovered and loaded plugin", "UCX"),
        ("Modified UCX config", "RNDV_THRESH", "inf"),
    ]
    assert [r[0] for r in rows] == ["line 1"] * 3 + ["line 2", "line 3", "line 4", "line 5"]


def test_a_tracing_targets_words_are_not_a_key_and_a_named_pid_is_a_fact():
    """batch9/15: Dynamo's `arbiter.start: Starting master on pid 3954` (Rust tracing's format, its
    target before the message): the pid the line names; no header pid is invented."""
    rows = _rows(
        "2025-04-24T07:42:05.837Z  INFO arbiter.start: Starting master on pid 3954\n"
        "2025-04-24T07:42:04.203Z  INFO nixl: NIXL is available\n"
    )
    assert rows == [("line 1", None, None, "Starting master on", "pid", "3954", 3954.0, None)]


def test_vllm_nixl_connector_debug_lines_give_the_remote_engine_blocks_and_handshake_seconds():
    """batch9/08: a UUID after its name, `Num …: N` and `NIXL handshake: get metadata took: X`."""
    rows = _rows(
        "(VllmWorker rank=1 pid=98474) DEBUG 07-08 02:13:53 [nixl_connector.py:860] start_load_kv for request"
        " cmpl-93706305-0119-4c28-b1d2-682767153598-0 from remote engine d8db2325-17b3-424e-a45b-2ec1bb58d71f."
        " Num local_block_ids: 4. Num remote_block_ids: 4. \n"
        "(VllmWorker rank=1 pid=98474) DEBUG 07-08 02:13:53 [nixl_connector.py:464] NIXL handshake: get"
        " metadata took: 0.002419697993900627\n"
    )
    assert [r[1:6] for r in rows] == [
        (
            1,
            98474,
            "start_load_kv for request cmpl-93706305-0119-4c28-b1d2-682767153598-0 from remote",
            "engine",
            "d8db2325-17b3-424e-a45b-2ec1bb58d71f",
        ),
        (1, 98474, None, "Num local_block_ids", "4"),  # the opening clause states a fact: no statement
        (1, 98474, None, "Num remote_block_ids", "4"),
        (1, 98474, "NIXL handshake", "get metadata took", "0.002419697993900627"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        # prose, a shell prompt, tool output: no logger's header
        "error info is Piecewise CUDA Graph failed with error: out of memory\n",
        "root:/usr/local/nixl/bin# ./mooncake_backend_test \n",
        "[==========] Running 1 test from 1 test suite.\n",
        # a warning or an error is the findings' business, never a fact
        "E0523 06:50:40.074718   223 client.cpp:444] Put operation failed with error: TRANSFER_FAIL\n",
        "W0523 06:50:40.064657   223 transfer_task.cpp:88] Transfer incomplete, retrying... (attempt 1/3)\n",
        # a record another table types (a batch line)
        "[2025-05-15 11:59:21 TP0] Decode batch. #running-req: 1, #token: 9, token usage: 0.00, gen throughput"
        " (token/s): 3.20, #queue-req: 0\n",
        # a line without a level whose words say it failed (CANN's error code line, batch3/05)
        "EE9999[PID: 163686] 2026-07-07-07:20:43.937.475 (EE9999):  rtEventQueryStatus execution failed,"
        " reason=aicore timeout[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:61]\n",
        # advice, not a setting: `=` and a prose tail (batch3/06)
        "[2026-07-07 07:21:06] CUDA user-triggered coredump is not enabled. Set CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1"
        " before CUDA initialization.\n",
        # a word that joins names nothing (batch9/14)
        "(EngineCore_0 pid=675221) (VllmWorker TP1 pid=675229) INFO 08-25 11:01:23 [gpu_model_runner.py:2024] Model"
        " loading took 6.3102 GiB and 1.202797 seconds\n",
        # SGLang's server_args line is the config table's
        "[2025-05-15 11:59:00] server_args=ServerArgs(model_path='m', tp_size=2, chunked_prefill_size=8192)\n",
    ],
)
def test_what_is_never_a_fact(text):
    assert _rows(text) == []


def test_a_tracing_lines_file_and_line_are_its_headers_not_a_statement():
    """Rust tracing prints `target: file.rs:N: message` (sgl-router, smg): both are taken off."""
    assert line_facts(
        "sgl_model_gateway::service_discovery: src/service_discovery.rs:555: Removing pod: prefill-node-19",
        "router",
    ) == [(None, "Removing pod", "prefill-node-19")]


def test_a_level_printed_as_a_word_and_colon_is_no_key():
    """uvicorn's format keeps its level in the body after SGLang's header: `INFO:` is no key."""
    assert line_facts("INFO:     Uvicorn running on http://0.0.0.0:30000", "sglang") == [
        ("Uvicorn", "running on", "http://0.0.0.0:30000")
    ]


def test_numbers_and_units():
    assert number_and_unit("24.71 GB") == (24.71, "GB")
    assert number_and_unit("0.0%") == (0.0, "%")
    assert number_and_unit("21.80 tokens/s") == (21.8, "tokens/s")
    assert number_and_unit("127.0.0.1") == (None, None)
    assert number_and_unit("1.19.0") == (None, None)


def test_ncclcomminitranks_name_value_pairs_are_facts_up_to_the_first_id():
    """batch14/10 line 1 (Docker container id as host, NCCL INFO): `ncclCommInitRank comm 0x55cc766f4060 rank 13
    nranks 16 cudaDev 5 nvmlDev 5 busId b1000 commId 0x… - Init COMPLETE`: the communicator's rank 13 of 16 and
    its devices; busId and commId (hex ids, a commId cut by a terminal wrap in batch4/12) are none."""
    rows = _rows(
        "aff040fb0091:259:259 [5] NCCL INFO ncclCommInitRank comm 0x55cc766f4060 rank 13 nranks 16 cudaDev 5"
        " nvmlDev 5 busId b1000 commId 0x5ef13d51922c3a69 - Init COMPLETE\n"
    )
    statement = "ncclCommInitRank comm 0x55cc766f4060"
    assert [r[3:7] for r in rows] == [
        (statement, "rank", "13", 13.0),
        (statement, "nranks", "16", 16.0),
        (statement, "cudaDev", "5", 5.0),
        (statement, "nvmlDev", "5", 5.0),
    ]
    split = (  # batch6/08 line 8
        "ncclCommSplit comm 0x7eefecbeb3b0 rank 4 nranks 16 cudaDev 4 nvmlDev 4 busId 69020 parent 0x564fe1225280"
        " color 1197013201 key 4 commId 0x5e372fd9a36b237d - Init COMPLETE"
    )
    assert [k for _, k, _ in line_facts(split)] == ["rank", "nranks", "cudaDev", "nvmlDev"]
