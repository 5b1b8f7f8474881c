"""Build sample_logs/: a simulated SGLang prefill-decode (PD) incident on one host, with its true answers.

Run ``python sample_logs/make_sample.py``. It rewrites, deterministically (fixed seed, fixed ids):
``journal.export`` (journal export format), ``router.log``, ``pyspy/*.txt``, ``README.md`` and, when
``systemd-journal-remote`` and ``journalctl`` are installed, the binary journal ``journal/<machine-id>/``
and its ``journalctl -o json`` capture ``journal.json``. Line formats follow SGLang (late 2025), the
sgl-router Rust tracing output, uvicorn, py-spy 0.4 and systemd 255; README.md says which is which.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import string
import subprocess
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20251029
rng = random.Random(SEED)

# journal-remote caps a file at a share of its file system: this size makes it rotate once, inside the
# incident (the archived file ends during the wedge)
JOURNAL_FS = "560m"
HOST = "gpu-node-1"
MACHINE_ID = "4c2f8e1a9b7d4e6f8a3c5b1d2e9f0a7c"
BOOT_ID = "d81e5a3c6f0b4b2a9e7c1f4d8a2b6c3e"
DAY = "2025-10-29"
KV_POOL = {"prefill": 413_696, "decode": 398_336}  # max_total_num_tokens of each engine
VENV_PY = "/opt/sglang/.venv/bin/python3"
SITE = "/opt/sglang/.venv/lib/python3.12/site-packages"
DESC = {
    "prefill": "SGLang prefill engine (PD, TP4)",
    "decode": "SGLang decode engine (PD, TP4)",
    "router": "SGLang PD router",
}
PORT = {"prefill": 30000, "decode": 30001}
CMD = {
    "prefill": f"{VENV_PY} -m sglang.launch_server --model-path /models/Llama-3.1-70B-Instruct"
    " --disaggregation-mode prefill --disaggregation-transfer-backend nixl --disaggregation-bootstrap-port 8998"
    " --tp 4 --host 0.0.0.0 --port 30000 --enable-hierarchical-cache --enable-metrics"
    " --enable-metrics-for-all-schedulers --soft-watchdog-timeout 300 --watchdog-timeout 3600",
    "decode": f"{VENV_PY} -m sglang.launch_server --model-path /models/Llama-3.1-70B-Instruct"
    " --disaggregation-mode decode --disaggregation-transfer-backend nixl --tp 4 --base-gpu-id 4"
    " --host 0.0.0.0 --port 30001 --enable-metrics --enable-metrics-for-all-schedulers"
    " --soft-watchdog-timeout 300 --watchdog-timeout 3600 --log-requests --log-requests-level 2",
    "router": f"{VENV_PY} -m sglang_router.launch_router --pd-disaggregation"
    " --prefill http://127.0.0.1:30000 8998 --decode http://127.0.0.1:30001"
    " --host 0.0.0.0 --port 8000 --policy round_robin --health-check-interval-secs 10",
}


# ``server_args=ServerArgs(…)``: the fields, in order, of SGLang 0.5.8.post1's ServerArgs, as one real line
# of that version prints them (tests/cases/server_args/02_*: a PD decode engine, DeepSeek-R1, mooncake,
# TP=16 over 2 nodes; source in that file). ``server_args_line`` sets the values of our engines on it.
# 0.5.8.post1 has every option the command lines above use (``--soft-watchdog-timeout`` came after 0.5.6).
SERVER_ARGS_VERSION = "0.5.8.post1"
SERVER_ARGS_0_5_8_POST1 = """
model_path='/app/models/Deepseek-R1/', tokenizer_path='/app/models/Deepseek-R1/', tokenizer_mode='auto',
tokenizer_worker_num=1, skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}',
trust_remote_code=True, context_length=None, is_embedding=False, enable_multimodal=None, revision=None,
model_impl='auto', host='10.99.91.49', port=30001, fastapi_root_path='', grpc_mode=False,
skip_server_warmup=False, warmups=None, nccl_port=None,
checkpoint_engine_wait_weights_before_ready=False, dtype='auto', quantization=None,
quantization_param_path=None, kv_cache_dtype='auto', enable_fp32_lm_head=False, modelopt_quant=None,
modelopt_checkpoint_restore_path=None, modelopt_checkpoint_save_path=None, modelopt_export_path=None,
quantize_and_serve=False, rl_quant_profile=None, mem_fraction_static=0.8, max_running_requests=128,
max_queued_requests=None, max_total_tokens=None, chunked_prefill_size=8192,
enable_dynamic_chunking=False, max_prefill_tokens=16384, prefill_max_requests=None,
schedule_policy='fcfs', enable_priority_scheduling=False, abort_on_priority_when_disabled=False,
schedule_low_priority_values_first=False, priority_scheduling_preemption_threshold=10,
schedule_conservativeness=1.0, page_size=1, swa_full_tokens_ratio=0.8, disable_hybrid_swa_memory=False,
radix_eviction_policy='lru', enable_prefill_delayer=False, prefill_delayer_max_delay_passes=30,
prefill_delayer_token_usage_low_watermark=None, prefill_delayer_forward_passes_buckets=None,
prefill_delayer_wait_seconds_buckets=None, device='cuda', tp_size=16, pp_size=1,
pp_max_micro_batch_size=None, pp_async_batch_depth=0, stream_interval=1, stream_output=False,
random_seed=741016548, constrained_json_whitespace_pattern=None,
constrained_json_disable_any_whitespace=False, watchdog_timeout=300, soft_watchdog_timeout=None,
dist_timeout=None, download_dir=None, model_checksum=None, base_gpu_id=0, gpu_id_step=1,
sleep_on_idle=False, custom_sigquit_handler=None, log_level='info', log_level_http=None,
log_requests=False, log_requests_level=2, log_requests_format='text', log_requests_target=None,
uvicorn_access_log_exclude_prefixes=[], crash_dump_folder=None, show_time_cost=False,
enable_metrics=False, enable_metrics_for_all_schedulers=False,
tokenizer_metrics_custom_labels_header='x-custom-labels', tokenizer_metrics_allowed_custom_labels=None,
bucket_time_to_first_token=None, bucket_inter_token_latency=None, bucket_e2e_request_latency=None,
collect_tokens_histogram=False, prompt_tokens_buckets=None, generation_tokens_buckets=None,
gc_warning_threshold_secs=0.0, decode_log_interval=40, enable_request_time_stats_logging=False,
kv_events_config=None, enable_trace=False, otlp_traces_endpoint='localhost:4317',
export_metrics_to_file=False, export_metrics_to_file_dir=None, api_key=None, admin_api_key=None,
served_model_name='/app/models/Deepseek-R1/', weight_version='default', chat_template=None,
hf_chat_template_name=None, completion_template=None, file_storage_path='sglang_storage',
enable_cache_report=False, reasoning_parser=None, tool_call_parser=None, tool_server=None,
sampling_defaults='model', dp_size=1, load_balance_method='round_robin',
dist_init_addr='10.99.91.49:5000', nnodes=2, node_rank=0, json_model_override_args='{}',
preferred_sampling_params=None, enable_lora=None, enable_lora_overlap_loading=None, max_lora_rank=None,
lora_target_modules=None, lora_paths=None, max_loaded_loras=None, max_loras_per_batch=8,
lora_eviction_policy='lru', lora_backend='csgmv', max_lora_chunk_size=16, attention_backend='fa3',
decode_attention_backend=None, prefill_attention_backend=None, sampling_backend='flashinfer',
grammar_backend='xgrammar', mm_attention_backend=None, fp8_gemm_runner_backend='auto',
fp4_gemm_runner_backend='auto', nsa_prefill_backend='flashmla_sparse', nsa_decode_backend='fa3',
disable_flashinfer_autotune=False, speculative_algorithm=None, speculative_draft_model_path=None,
speculative_draft_model_revision=None, speculative_draft_load_format=None, speculative_num_steps=None,
speculative_eagle_topk=None, speculative_num_draft_tokens=None, speculative_accept_threshold_single=1.0,
speculative_accept_threshold_acc=1.0, speculative_token_map=None, speculative_attention_mode='prefill',
speculative_draft_attention_backend=None, speculative_moe_runner_backend='auto',
speculative_moe_a2a_backend=None, speculative_draft_model_quantization=None,
speculative_ngram_min_match_window_size=1, speculative_ngram_max_match_window_size=12,
speculative_ngram_min_bfs_breadth=1, speculative_ngram_max_bfs_breadth=10,
speculative_ngram_match_type='BFS', speculative_ngram_branch_length=18,
speculative_ngram_capacity=10000000, enable_multi_layer_eagle=False, ep_size=1, moe_a2a_backend='none',
moe_runner_backend='auto', flashinfer_mxfp4_moe_precision='default',
enable_flashinfer_allreduce_fusion=False, deepep_mode='auto', ep_num_redundant_experts=0,
ep_dispatch_algorithm=None, init_expert_location='trivial', enable_eplb=False, eplb_algorithm='auto',
eplb_rebalance_num_iterations=1000, eplb_rebalance_layers_per_chunk=None,
eplb_min_rebalancing_utilization_threshold=1.0, expert_distribution_recorder_mode=None,
expert_distribution_recorder_buffer_size=1000, enable_expert_distribution_metrics=False,
deepep_config=None, moe_dense_tp_size=None, elastic_ep_backend=None, mooncake_ib_device=None,
max_mamba_cache_size=None, mamba_ssm_dtype='float32', mamba_full_memory_ratio=0.9,
mamba_scheduler_strategy='no_buffer', mamba_track_interval=256, enable_hierarchical_cache=False,
hicache_ratio=2.0, hicache_size=0, hicache_write_policy='write_through', hicache_io_backend='kernel',
hicache_mem_layout='layer_first', disable_hicache_numa_detect=False, hicache_storage_backend=None,
hicache_storage_prefetch_policy='best_effort', hicache_storage_backend_extra_config=None,
hierarchical_sparse_attention_extra_config=None, enable_lmcache=False, kt_weight_path=None,
kt_method='AMXINT4', kt_cpuinfer=None, kt_threadpool_count=2, kt_num_gpu_experts=None,
kt_max_deferred_experts_per_token=None, dllm_algorithm=None, dllm_algorithm_config=None,
enable_double_sparsity=False, ds_channel_config_path=None, ds_heavy_channel_num=32,
ds_heavy_token_num=256, ds_heavy_channel_type='qk', ds_sparse_decode_threshold=4096, cpu_offload_gb=0,
offload_group_size=-1, offload_num_in_group=1, offload_prefetch_step=1, offload_mode='cpu',
multi_item_scoring_delimiter=None, disable_radix_cache=True, cuda_graph_max_bs=512, cuda_graph_bs=[1, 2,
4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176,
184, 192, 200, 208, 216, 224, 232, 240, 248, 256, 272, 288, 304, 320, 336, 352, 368, 384, 400, 416, 432,
448, 464, 480, 496, 512], disable_cuda_graph=False, disable_cuda_graph_padding=False,
enable_profile_cuda_graph=False, enable_cudagraph_gc=False, enable_layerwise_nvtx_marker=False,
enable_nccl_nvls=False, enable_symm_mem=False, disable_flashinfer_cutlass_moe_fp4_allgather=False,
enable_tokenizer_batch_encode=False, disable_tokenizer_batch_decode=False,
disable_outlines_disk_cache=False, disable_custom_all_reduce=False, enable_mscclpp=False,
enable_torch_symm_mem=False, disable_overlap_schedule=False, enable_mixed_chunk=False,
enable_dp_attention=False, enable_dp_lm_head=False, enable_two_batch_overlap=False,
enable_single_batch_overlap=False, tbo_token_distribution_threshold=0.48, enable_torch_compile=False,
enable_piecewise_cuda_graph=False, enable_torch_compile_debug_mode=False, torch_compile_max_bs=32,
piecewise_cuda_graph_max_tokens=2048, piecewise_cuda_graph_tokens=[4, 8, 12, 16, 20, 24, 28, 32, 48, 64,
80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 640,
704, 768, 832, 896, 960, 1024, 1280, 1536, 1792, 2048], piecewise_cuda_graph_compiler='eager',
torchao_config='', enable_nan_detection=False, enable_p2p_check=False,
triton_attention_reduce_in_fp32=False, triton_attention_num_kv_splits=8,
triton_attention_split_tile_size=None, num_continuous_decode_steps=1, delete_ckpt_after_loading=False,
enable_memory_saver=False, enable_weights_cpu_backup=False, enable_draft_weights_cpu_backup=False,
allow_auto_truncate=False, enable_custom_logit_processor=False, flashinfer_mla_disable_ragged=False,
disable_shared_experts_fusion=False, disable_chunked_prefix_cache=False,
disable_fast_image_processor=False, keep_mm_feature_on_device=False, enable_return_hidden_states=False,
enable_return_routed_experts=False, scheduler_recv_interval=1, numa_node=None,
enable_deterministic_inference=False, rl_on_policy_target=None, enable_attn_tp_input_scattered=False,
enable_nsa_prefill_context_parallel=False, nsa_prefill_cp_mode='in-seq-split',
enable_fused_qk_norm_rope=False, enable_precise_embedding_interpolation=False,
enable_dynamic_batch_tokenizer=False, dynamic_batch_tokenizer_batch_size=32,
dynamic_batch_tokenizer_batch_timeout=0.002, debug_tensor_dump_output_folder=None,
debug_tensor_dump_layers=None, debug_tensor_dump_input_file=None, debug_tensor_dump_inject=False,
disaggregation_mode='decode', disaggregation_transfer_backend='mooncake',
disaggregation_bootstrap_port=8998, disaggregation_decode_tp=None, disaggregation_decode_dp=None,
disaggregation_prefill_pp=1,
disaggregation_ib_device='mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7',
disaggregation_decode_enable_offload_kvcache=False, disaggregation_decode_enable_fake_auto=False,
num_reserved_decode_tokens=512, disaggregation_decode_polling_interval=1, encoder_only=False,
language_only=False, encoder_transfer_backend='zmq_to_scheduler', encoder_urls=[],
custom_weight_loader=[], weight_loader_disable_mmap=False,
remote_instance_weight_loader_seed_instance_ip=None,
remote_instance_weight_loader_seed_instance_service_port=None,
remote_instance_weight_loader_send_weights_group_ports=None,
remote_instance_weight_loader_backend='nccl',
remote_instance_weight_loader_start_seed_via_transfer_engine=False, enable_pdmux=False,
pdmux_config_path=None, sm_group_num=8, mm_max_concurrent_calls=32, mm_per_request_timeout=10.0,
enable_broadcast_mm_inputs_process=False, enable_prefix_mm_cache=False, mm_enable_dp_encoder=False,
mm_process_config={}, limit_mm_data_per_request=None, decrypted_config_file=None,
decrypted_draft_config_file=None, forward_hooks=None
"""
# Our engines' values: what the command lines set, and what SGLang resolves for them (a Llama-3.1-70B
# engine on H100s: fa3 attention; prefill without CUDA graphs; decode's radix cache forced to a chunk cache;
# the CUDA graph batch sizes decode's start-up captures).
DECODE_GRAPH_BS = [1, 2, 4, 8] + list(range(16, 161, 8))
SERVER_ARGS_VALUES = {
    "model_path": "/models/Llama-3.1-70B-Instruct", "tokenizer_path": "/models/Llama-3.1-70B-Instruct",
    "trust_remote_code": False, "host": "0.0.0.0", "mem_fraction_static": 0.853, "max_running_requests": None,
    "tp_size": 4, "watchdog_timeout": 3600.0, "soft_watchdog_timeout": 300.0, "enable_metrics": True,
    "enable_metrics_for_all_schedulers": True, "served_model_name": "/models/Llama-3.1-70B-Instruct",
    "dist_init_addr": None, "nnodes": 1, "attention_backend": "fa3", "cuda_graph_max_bs": 160,
    "cuda_graph_bs": DECODE_GRAPH_BS, "disable_overlap_schedule": False,
    "disaggregation_transfer_backend": "nixl", "disaggregation_bootstrap_port": 8998,
    "disaggregation_ib_device": None,
}  # fmt: skip
SERVER_ARGS_ROLE = {
    "prefill": {
        "port": 30000, "random_seed": 602375711, "base_gpu_id": 0, "log_requests": False,
        "enable_hierarchical_cache": True, "disable_radix_cache": False, "disable_cuda_graph": True,
        "disaggregation_mode": "prefill",
    },
    "decode": {
        "port": 30001, "random_seed": 155012364, "base_gpu_id": 4, "log_requests": True,
        "enable_hierarchical_cache": False, "disable_radix_cache": True, "disable_cuda_graph": False,
        "disaggregation_mode": "decode",
    },
}  # fmt: skip


def repr_fields(body: str) -> list[tuple[str, str]]:
    """``[(field, value as printed)]`` of a dataclass repr's body ``a=1, b='x, y', c=[1, 2]``: split at
    the commas outside brackets and quotes."""
    out, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(body + ","):
        if quote:
            quote = "" if ch == quote and body[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            key, _, value = body[start:i].strip().partition("=")
            out.append((key, value))
            start = i + 1
    return out


def server_args_line(role: str) -> str:
    """The ``server_args=ServerArgs(…)`` message an engine's main process logs at start (SGLang 0.5.8.post1's
    fields and order, our engines' values), without the ``[time]`` prefix."""
    fields = repr_fields(" ".join(SERVER_ARGS_0_5_8_POST1.split("\n")).strip())
    values = SERVER_ARGS_VALUES | SERVER_ARGS_ROLE[role]
    assert set(values) <= {k for k, _ in fields}, set(values) - {k for k, _ in fields}
    body = ", ".join(f"{k}={repr(values[k]) if k in values else v}" for k, v in fields)
    return f"server_args=ServerArgs({body})"


CONFIG_SHOWN = (  # the README's configuration columns
    "tp_size", "disaggregation_mode", "disaggregation_transfer_backend", "disable_overlap_schedule",
    "enable_hierarchical_cache", "watchdog_timeout", "soft_watchdog_timeout",
)  # fmt: skip


def cmdline_disagreements(role: str) -> list[str]:
    """Options of ``CMD[role]`` whose value differs from the ``server_args`` line's (``--tp`` is argparse's
    prefix of ``--tp-size``; a flag without a value is a ``store_true`` boolean); empty when they agree."""
    printed = dict(repr_fields(server_args_line(role)[len("server_args=ServerArgs(") : -1]))
    words = CMD[role].split()
    out = []
    for i, w in enumerate(words):
        if not w.startswith("--"):
            continue
        name = {"tp": "tp_size"}.get(w[2:], w[2:].replace("-", "_"))
        given = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else "True"
        logged = printed[name].strip("'")
        same = logged == given
        if not same:
            try:
                same = float(logged) == float(given)
            except ValueError:
                pass
        if not same:
            out.append(f"{name}: command line {given}, server_args {logged}")
    return out


def at(hms: str) -> int:
    """Microseconds since the epoch of ``HH:MM:SS[.ffffff]`` on 2025-10-29 UTC."""
    whole, _, frac = hms.partition(".")
    day = datetime.fromisoformat(f"{DAY}T{whole}+00:00")
    return int(day.timestamp()) * 1_000_000 + int(frac.ljust(6, "0")[:6])


def stamp(t: int) -> str:
    """The second SGLang and the router print for the time ``t`` (µs): the host clock is UTC."""
    return datetime.fromtimestamp(t // 1_000_000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def iso(t: int) -> str:
    """``t`` (µs) as ISO 8601 with microseconds, UTC."""
    return datetime.fromtimestamp(t / 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ms(lo: float, hi: float, rand: random.Random | None = None) -> int:
    """A random delay between ``lo`` and ``hi`` milliseconds, in µs (from ``rand``, else the main generator)."""
    return round((rand or rng).uniform(lo, hi) * 1000)


def hexid(name: str) -> str:
    """A fixed 128-bit id (32 hex, shaped like systemd's random v4 ids) derived from ``name``."""
    return uuid.UUID(int=uuid.uuid5(uuid.NAMESPACE_DNS, f"logcorr-sample/{name}").int, version=4).hex


def new_rid() -> str:
    """A request id as SGLang makes it (uuid4().hex), from the seeded generator."""
    return uuid.UUID(int=rng.getrandbits(128), version=4).hex


BOOT = at("06:12:37.481516")  # realtime at monotonic zero
QUIET = at("21:23:00")  # the data's first minutes: one client, one request at a time, until the load
T0 = at("21:25:00")
BURST_FIRST_ARRIVAL, BURST_LAST_ARRIVAL = at("21:34:38.850"), at("21:34:45.350")
WEDGE = at("21:34:47.412318")  # the decode scheduler's last batch (TP0)
WATCHDOG = at("21:39:47.051208")
DUMP_1, DUMP_2 = at("21:40:10"), at("21:40:15")
RESTART = at("21:40:45.103228")
READY = at("21:42:00.214779")
END = at("21:43:00")


@dataclass
class Proc:
    """One process writing to the journal, with the fields journald attaches to its lines."""

    unit: str
    pid: int
    comm: str
    cmdline: str
    stream: str
    invocation: str
    uid: int = 998
    gid: int = 998


@dataclass
class Req:
    """One client request through the router to prefill and decode."""

    kind: str  # quiet, normal, burst, wedge, post
    a: int  # router receives it
    request_id: str
    rid_p: str
    rid_d: str
    room: int
    prompt: int
    cached: int
    output: int
    port_p: int
    port_d: int
    ready: int | None = None  # bootstrapped on prefill
    batch_start: int | None = None
    batch_end: int | None = None
    prefill_done: int | None = None
    dec_start: int | None = None
    dec_end: int | None = None
    abort: int | None = None


class Journal:
    """Entries in journald's shape: one entry per stdout line, times unique, each record's lines together."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, dict[str, str]]] = []
        self.used: set[int] = set()
        self.busy: dict[int, list[tuple[int, int]]] = {}

    def add(self, t: int, fields: dict[str, str]) -> int:
        """Append one entry received at ``t`` (µs, moved on to a free µs); returns its time."""
        while t in self.used:
            t += 1
        self.used.add(t)
        head = {
            "__REALTIME_TIMESTAMP": str(t),
            "__MONOTONIC_TIMESTAMP": str(t - BOOT),
            "_BOOT_ID": BOOT_ID,
            "_MACHINE_ID": MACHINE_ID,
            "_HOSTNAME": HOST,
        }
        self.entries.append((t, head | fields))
        return t

    def _place(self, pid: int, first: int, span: int) -> int:
        """Move a record of ``pid`` spanning ``span`` µs so that it overlaps no other record of that pid."""
        blocks = self.busy.setdefault(pid, [])
        moved = True
        while moved:
            moved = False
            for lo, hi in blocks:
                if first <= hi + 2 and first + span >= lo - 2:
                    first, moved = hi + 5, True
        blocks.append((first, first + span))
        return first

    def out(self, proc: Proc, t: int, text: str, rand: random.Random | None = None) -> list[int]:
        """Lines written by ``proc`` at ``t`` to its stdout stream: one entry per non-empty line (delays
        from ``rand``, else the main generator)."""
        rand = rand or rng
        lines = [x for x in text.split("\n") if x]
        first = self._place(proc.pid, t + ms(0.06, 0.35, rand), 8 * len(lines))
        times, prev = [], first - 1
        for i, line in enumerate(lines):
            fields = {
                "_TRANSPORT": "stdout",
                "_STREAM_ID": proc.stream,
                "PRIORITY": "6",
                "SYSLOG_IDENTIFIER": "python3",
                "_PID": str(proc.pid),
                "_UID": str(proc.uid),
                "_GID": str(proc.gid),
                "_COMM": proc.comm,
                "_EXE": "/usr/bin/python3.12",
                "_CMDLINE": proc.cmdline,
                "_SYSTEMD_CGROUP": f"/system.slice/{proc.unit}",
                "_SYSTEMD_UNIT": proc.unit,
                "_SYSTEMD_SLICE": "system.slice",
                "_SYSTEMD_INVOCATION_ID": proc.invocation,
                "MESSAGE": line,
            }
            prev = self.add(max(first + 4 * i + rand.randint(0, 3), prev + 1), fields)
            times.append(prev)
        return times


J = Journal()


def engine_procs(role: str, main_pid: int, tp_pids: list[int], generation: int) -> tuple[Proc, list[Proc]]:
    """The main (HTTP/tokenizer) process and the four scheduler processes of one engine invocation."""
    unit = f"sglang-{role}.service"
    inv, stream = hexid(f"{role}-{generation}-invocation"), hexid(f"{role}-{generation}-stream")
    main = Proc(unit, main_pid, "python3", CMD[role], stream, inv)
    scheds = [
        Proc(unit, pid, "sglang::schedul", f"sglang::scheduler_TP{k}", stream, inv)
        for k, pid in enumerate(tp_pids)
    ]
    return main, scheds


P_MAIN, P_TP = engine_procs("prefill", 2841, [3307, 3308, 3309, 3310], 1)
D_MAIN, D_TP = engine_procs("decode", 2842, [3371, 3372, 3373, 3374], 1)
P2_MAIN, P2_TP = engine_procs("prefill", 918233, [918655, 918656, 918657, 918658], 2)
D2_MAIN, D2_TP = engine_procs("decode", 918234, [918661, 918662, 918663, 918664], 2)
ROUTER = Proc(
    "sglang-router.service", 2790, "python3", CMD["router"], hexid("router-stream"), hexid("router-inv")
)


def sg(proc: Proc, t: int, msg: str, rank: int | None = None) -> list[int]:
    """An SGLang log record: ``[YYYY-MM-DD HH:MM:SS TPn] msg`` (no rank on the main process)."""
    prefix = f"[{stamp(t)} TP{rank}]" if rank is not None else f"[{stamp(t)}]"
    return J.out(proc, t, f"{prefix} {msg}")


def access(proc: Proc, t: int, port: int, method: str, path: str, status: str) -> list[int]:
    """A uvicorn access line as SGLang configures it."""
    return sg(proc, t, f'INFO:     127.0.0.1:{port} - "{method} {path} HTTP/1.1" {status}')


# ----------------------------------------------------------------------------- router (Rust tracing)


def rust_duration(ns: int) -> str:
    """Rust's ``{:?}`` of a Duration (what the router records as ``latency``)."""
    for size, digits, unit in ((10**9, 9, "s"), (10**6, 6, "ms"), (10**3, 3, "µs")):
        if ns >= size:
            whole, frac = divmod(ns, size)
            frac_text = str(frac).rjust(digits, "0").rstrip("0")
            return f"{whole}.{frac_text}{unit}" if frac_text else f"{whole}{unit}"
    return f"{ns}ns"


def router(t: int, level: str, req: Req, target: str, where: str, msg: str, extra: str = "") -> None:
    """One sgl-router line: UTC second, level right-aligned to 5, the http_request span, target, file:line."""
    span = f'http_request{{method=POST uri=/generate version=HTTP/1.1 request_id="{req.request_id}"{extra}}}'
    J.out(ROUTER, t, f"{stamp(t)} {level:>5} {span}: {target}: {where}: {msg}")


def router_start(req: Req) -> None:
    """The router's 'started processing request' line."""
    router(
        req.a, "INFO", req, "sglang_router_rs::request", "src/middleware.rs:264", "started processing request"
    )


def router_finish(req: Req, t: int, status: int) -> None:
    """The router's response line, with status and latency recorded in the span."""
    extra = f' status_code={status} latency="{rust_duration((t - req.a) * 1000 + rng.randint(0, 999))}"'
    if status >= 500:
        router(
            t,
            "ERROR",
            req,
            "sglang_router_rs::response",
            "src/middleware.rs:296",
            "request failed with server error",
            extra,
        )
    else:
        router(
            t,
            "INFO",
            req,
            "sglang_router_rs::response",
            "src/middleware.rs:308",
            "finished processing request",
            extra,
        )


# ----------------------------------------------------------------------------- traffic


DECODE_PORTS = [rng.randint(32768, 60999) for _ in range(12)]  # the router's keep-alive pool to decode


def make_req(kind: str, a: int) -> Req:
    """A request arriving at the router at ``a`` (µs)."""
    prompt = rng.randint(300, 3800)
    cached = min(rng.choice([0, 0, 0, 512, 1024, 1024, 1536]), prompt - 64)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return Req(
        kind=kind,
        a=a,
        request_id="gnt-" + "".join(rng.choice(alphabet) for _ in range(24)),
        rid_p=new_rid(),
        rid_d=new_rid(),
        room=rng.getrandbits(63),
        prompt=prompt,
        cached=max(cached, 0),
        output=rng.randint(60, 700),
        port_p=rng.randint(32768, 60999),
        port_d=rng.choice(DECODE_PORTS),
    )


def arrivals(kind: str, start: int, stop: int, per_s: float) -> list[Req]:
    """Poisson arrivals between ``start`` and ``stop``."""
    out, t = [], start
    while True:
        t += round(rng.expovariate(per_s) * 1_000_000)
        if t >= stop:
            return out
        out.append(make_req(kind, t))


def prefill_batches(reqs: list[Req], start: int, stop: int) -> None:
    """Run the prefill scheduler over requests bootstrapped (``ready``) before ``stop``: sets batch times."""
    queue = sorted((r for r in reqs if r.ready is not None and r.ready < stop), key=lambda r: r.ready)
    free, i = start, 0
    while i < len(queue):
        t = max(free, queue[i].ready) + ms(0.3, 2.0)
        group = []
        while i < len(queue) and queue[i].ready <= t and sum(r.prompt - r.cached for r in group) < 12000:
            group.append(queue[i])
            i += 1
        free = t + ms(25, 40) + round(sum(r.prompt - r.cached for r in group) / 15000 * 1_000_000)
        for r in group:
            r.batch_start, r.batch_end = t, free


def simulate() -> list[Req]:
    """Requests of the whole window with their fate; fills in every time on each request."""
    normal = arrivals("normal", T0, WEDGE, 0.55)
    burst = [make_req("burst", BURST_FIRST_ARRIVAL)]
    while len(burst) < 30:
        burst.append(make_req("burst", burst[-1].a + ms(150, 320)))
    scale = (BURST_LAST_ARRIVAL - BURST_FIRST_ARRIVAL) / (burst[-1].a - BURST_FIRST_ARRIVAL)
    for r in burst:
        r.a = BURST_FIRST_ARRIVAL + round((r.a - BURST_FIRST_ARRIVAL) * scale)
        r.abort = r.a + ms(1200, 1500)
    wedge = arrivals("wedge", WEDGE + ms(300, 900), RESTART - 2_000_000, 0.3)
    post = arrivals("post", READY + 1_800_000, END - 400_000, 0.55)
    for r in normal + post:
        r.ready = r.a + ms(25, 90)
    for r in wedge:
        if rng.random() < 0.35:
            r.ready = r.a + ms(300, 3000)
    prefill_batches(normal + wedge, T0, RESTART - 1_500_000)
    prefill_batches(post, READY, END)
    for r in normal + post:
        if r.batch_end is None:
            continue
        done = r.batch_end + ms(40, 160)
        if r.kind == "normal" and done >= WEDGE:
            continue  # the transfer never completes: decode no longer polls
        r.prefill_done = done
        r.dec_start = done + ms(5, 25)
        r.dec_end = r.dec_start + round(r.output / 15 * 1_000_000)
    return sorted(normal + burst + wedge + post, key=lambda r: r.a)


# ----------------------------------------------------------------------------- py-spy


@dataclass
class Libs:
    """Where one process has its libraries mapped (ASLR: every process has its own bases)."""

    libc: int
    cuda: int
    nccl: int

    def at(self, lib: str, offset: int) -> str:
        """A native frame py-spy could not name: the address ``offset`` into ``lib``."""
        base = {"libc.so.6": self.libc, "libcuda.so.1": self.cuda, "libnccl.so.2": self.nccl}[lib]
        return f"0x{base + offset:x} ({lib})"


def libs_for(pid: int) -> Libs:
    """Library bases of ``pid``, fixed per pid."""
    r = random.Random(pid)
    return Libs(*(0x7F0000000000 + r.randrange(0, 0xFE00000) * 0x1000 for _ in range(3)))


TAIL = [
    "run (multiprocessing/process.py:108)",
    "_bootstrap (multiprocessing/process.py:314)",
    "_main (multiprocessing/spawn.py:135)",
    "spawn_main (multiprocessing/spawn.py:122)",
    "<module> (<string>:1)",
]


def nccl_all_reduce_stack(libs: Libs, mode: str) -> list[str]:
    """Main thread waiting in the TP all_reduce of the first layer (embedding) of a model forward."""
    forward = (
        "forward_extend (sglang/srt/model_executor/model_runner.py:1917)"
        if mode == "prefill"
        else "forward_decode (sglang/srt/model_executor/model_runner.py:1869)"
    )
    loop = (
        "event_loop_overlap_disagg_prefill (sglang/srt/disaggregation/prefill.py:371)"
        if mode == "prefill"
        else "event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py:854)"
    )
    return [
        libs.at("libcuda.so.1", 0x2F1B4E),
        libs.at("libnccl.so.2", 0x8C3D19),
        "ncclAllReduce (libnccl.so.2)",
        "c10d::ProcessGroupNCCL::allreduce (libtorch_cuda.so)",
        "all_reduce (torch/distributed/distributed_c10d.py:2806)",
        "wrapper (torch/distributed/c10d_logger.py:81)",
        "all_reduce (sglang/srt/distributed/parallel_state.py:517)",
        "tensor_model_parallel_all_reduce (sglang/srt/distributed/communication_op.py:13)",
        "forward (sglang/srt/layers/vocab_parallel_embedding.py:488)",
        "_call_impl (torch/nn/modules/module.py:1784)",
        "_wrapped_call_impl (torch/nn/modules/module.py:1773)",
        "forward (sglang/srt/models/llama.py:338)",
        "_call_impl (torch/nn/modules/module.py:1784)",
        "_wrapped_call_impl (torch/nn/modules/module.py:1773)",
        "forward (sglang/srt/models/llama.py:467)",
        "decorate_context (torch/utils/_contextlib.py:120)",
        forward,
        "forward (sglang/srt/model_executor/model_runner.py:1985)",
        "forward_batch_generation (sglang/srt/managers/tp_worker.py:259)",
        "run_batch (sglang/srt/managers/scheduler.py:1987)",
        loop,
        "decorate_context (torch/utils/_contextlib.py:120)",
        "run_scheduler_process (sglang/srt/managers/scheduler.py:2836)",
        *TAIL,
        libs.at("libc.so.6", 0x29D90),
    ]


def gloo_broadcast_stack(libs: Libs, rank: int) -> list[str]:
    """Main thread waiting in recv_requests' CPU-group (gloo) broadcast; TP0 is its source."""
    line = 1147 if rank == 0 else 1163
    return [
        libs.at("libc.so.6", 0x91117),
        "pthread_cond_wait (libc.so.6)",
        "std::condition_variable::wait (libstdc++.so.6)",
        "c10d::ProcessGroupGloo::AsyncWork::wait (libtorch_cpu.so)",
        "broadcast (torch/distributed/distributed_c10d.py:2772)",
        "wrapper (torch/distributed/c10d_logger.py:81)",
        f"broadcast_pyobj (sglang/srt/utils/common.py:{line})",
        "recv_requests (sglang/srt/managers/scheduler.py:1206)",
        "event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py:841)",
        "decorate_context (torch/utils/_contextlib.py:120)",
        "run_scheduler_process (sglang/srt/managers/scheduler.py:2836)",
        *TAIL,
        libs.at("libc.so.6", 0x29D90),
    ]


def thread_tail(libs: Libs) -> list[str]:
    """The bottom of every threading.Thread stack."""
    return [
        "run (threading.py:1010)",
        "_bootstrap_inner (threading.py:1073)",
        "_bootstrap (threading.py:1030)",
        libs.at("libc.so.6", 0x94AC3),
        libs.at("libc.so.6", 0x126850),
    ]


def watchdog_thread(libs: Libs, firing: bool) -> list[str]:
    """The scheduler's watchdog thread: asleep, or running py-spy on its own process."""
    if firing:
        body = [
            "poll (libc.so.6)",
            "select (selectors.py:415)",
            "_communicate (subprocess.py:2115)",
            "communicate (subprocess.py:1209)",
            "run (subprocess.py:550)",
            "pyspy_dump_schedulers (sglang/srt/utils/common.py:2317)",
            "_watchdog_once (sglang/srt/utils/watchdog.py:61)",
        ]
    else:
        body = ["clock_nanosleep (libc.so.6)", "_watchdog_once (sglang/srt/utils/watchdog.py:58)"]
    return body + ["_watchdog_thread (sglang/srt/utils/watchdog.py:35)"] + thread_tail(libs)


def helper_thread(libs: Libs, role: str) -> tuple[str, list[str]]:
    """One idle NIXL helper thread: the prefill transfer worker or the decode heartbeat checker."""
    if role == "prefill":
        return "transfer_worker", [
            libs.at("libc.so.6", 0x91117),
            "PyThread_acquire_lock_timed (python3.12)",
            "wait (threading.py:355)",
            "get (sglang/srt/disaggregation/common/utils.py:48)",
            "transfer_worker (sglang/srt/disaggregation/nixl/conn.py:718)",
            *thread_tail(libs),
        ]
    return "heartbeat_checker", [
        "clock_nanosleep (libc.so.6)",
        "heartbeat_checker (sglang/srt/disaggregation/nixl/conn.py:1247)",
        *thread_tail(libs),
    ]


def pyspy_dump(role: str, rank: int, pid: int, watchdog_firing: bool = False) -> str:
    """``py-spy dump --native --pid PID`` of one scheduler as it stood during the wedge."""
    libs = libs_for(pid)
    if role == "prefill":
        main, main_state = nccl_all_reduce_stack(libs, "prefill"), "active"
    elif rank in (0, 1):
        main, main_state = gloo_broadcast_stack(libs, rank), "idle"
    else:
        main, main_state = nccl_all_reduce_stack(libs, "decode"), "active"
    helper_name, helper = helper_thread(libs, role)
    tid_wd, tid_helper = pid + 694 + 3 * rank, pid + 702 + 3 * rank
    lines = [
        f"Process {pid}: sglang::scheduler_TP{rank}",
        "Python v3.12.3 (/usr/bin/python3.12)",
        "",
        f'Thread {pid} ({main_state}): "MainThread"',
        *(f"    {f}" for f in main),
        f'Thread {tid_wd} (idle): "Thread-2 (_watchdog_thread)"',
        *(f"    {f}" for f in watchdog_thread(libs, watchdog_firing)),
    ]
    lines += [f'Thread {tid_helper} (idle): "Thread-4 ({helper_name})"', *(f"    {f}" for f in helper)]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the incident


def fmt_prefill(
    n: int, new: int, cached: int, usage: float, queue: int, prealloc: int, inflight: int, thr: float
) -> str:
    """SGLang's prefill-mode batch line (scheduler_metrics_mixin.log_prefill_stats)."""
    return (
        f"Prefill batch, #new-seq: {n}, #new-token: {new}, #cached-token: {cached}, token usage: {usage:.2f}, "
        f"#running-req: 0, #queue-req: {queue}, #prealloc-req: {prealloc}, #inflight-req: {inflight}, "
        f"input throughput (token/s): {thr:.2f}, cuda graph: False"
    )


def fmt_decode(
    n: int, tokens: int, usage: float, pre_usage: float, prealloc: int, transfer: int, gen: float
) -> str:
    """SGLang's decode-mode batch line (scheduler_metrics_mixin.log_decode_stats)."""
    return (
        f"Decode batch, #running-req: {n}, #token: {tokens}, token usage: {usage:.2f}, "
        f"pre-allocated usage: {pre_usage:.2f}, #prealloc-req: {prealloc}, #transfer-req: {transfer}, "
        f"#retracted-req: 0, cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0"
    )


def log_prefill(reqs: list[Req], batches: list[tuple[int, list[Req]]], ranks: list[Proc]) -> dict[int, int]:
    """Prefill batch lines on all four ranks; returns the last batch time per rank."""
    last: dict[int, int] = {}
    prev_t, prev_tokens = None, 0
    for t, group in batches:
        new = sum(r.prompt - r.cached for r in group)
        prealloc = sum(
            1
            for r in reqs
            if r.a + 3000 <= t
            and (r.ready is None or r.ready > t)
            and (r.abort is None or r.abort > t)
            and (r.kind != "wedge" or t < RESTART)
        )
        holding = [
            r
            for r in reqs
            if r.batch_end is not None and r.batch_end <= t and (r.prefill_done is None or r.prefill_done > t)
        ]
        usage = sum(r.prompt for r in holding) / KV_POOL["prefill"]
        thr = prev_tokens / ((t - prev_t) / 1e6) if prev_t else 0.0
        for k, proc in enumerate(ranks):
            tk = t + (0 if k == 0 else ms(0.2, 2.8))
            cached = sum(r.cached for r in group)
            msg = fmt_prefill(
                len(group), new, cached, usage, 0, prealloc, len(holding), thr * rng.uniform(0.9995, 1.0005)
            )
            last[k] = sg(proc, tk, msg, k)[0]
        prev_t, prev_tokens = t, new
    return last


def generated(r: Req, lo: int, hi: int) -> float:
    """Tokens request ``r`` generated between ``lo`` and ``hi`` (15 token/s per request)."""
    if r.dec_start is None:
        return 0.0
    end = r.dec_end
    overlap = min(hi, end) - max(lo, r.dec_start)
    return max(overlap, 0) / 1e6 * 15


def log_decode(
    reqs: list[Req], start: int, stop: int, ranks: list[Proc], final: int | None
) -> dict[int, int]:
    """Decode batch lines every 2.0-3.0 s on all four ranks; ``final`` forces the last one's time."""
    times, t = [], start
    while True:
        t += ms(2000, 3000)
        if t >= stop:
            break
        times.append(t)
    if final is not None:
        times = [x for x in times if x < final - 900_000] + [final]
    last: dict[int, int] = {}
    prev = {k: start for k in range(4)}
    for t in times:
        running = [r for r in reqs if r.dec_start is not None and r.dec_start <= t < r.dec_end]
        if not running:
            continue
        tokens = sum(r.prompt + round(generated(r, r.dec_start, t)) for r in running)
        prealloc = sum(
            1
            for r in reqs
            if r.a + 3000 <= t
            and ((r.kind == "burst" and t < r.abort) or (r.ready is not None and t < r.ready))
        )
        transfer = [
            r
            for r in reqs
            if r.ready is not None
            and r.ready <= t
            and (r.prefill_done is None or t < r.prefill_done)
            and r.kind != "wedge"
        ]
        pre_usage = sum(r.prompt for r in transfer) / KV_POOL["decode"]
        for k, proc in enumerate(ranks):
            tk = t + (0 if k == 0 else ms(0.4, 1.4) * k)
            gen = sum(generated(r, prev[k], tk) for r in reqs) / ((tk - prev[k]) / 1e6)
            msg = fmt_decode(
                len(running), tokens, tokens / KV_POOL["decode"], pre_usage, prealloc, len(transfer), gen
            )
            last[k] = sg(proc, tk, msg, k)[0]
            prev[k] = tk
    return last


def health(main: Proc, start: int, stop: int, offset_ms: float, ports: list[int]) -> None:
    """The router's health checks every 10 s: ``GET /health`` 200 on the engine."""
    t = start + ms(offset_ms, offset_ms + 1)
    while t < stop:
        access(main, t + ms(0.8, 2.5), rng.choice(ports), "GET", "/health", "200 OK")
        t += 10_000_000 + ms(-2, 2)


STARTUP_RNG = random.Random(SEED + 17)  # the server_args lines' own generator


def startup(main: Proc, ranks: list[Proc], role: str, started: int) -> int:
    """What a (re)started engine prints until it serves; returns the time of 'fired up' (READY)."""
    t = started + ms(5800, 6400)
    if role == "prefill":
        sg(main, t, "Cuda graph is disabled for prefill server")
    # then the resolved configuration, once, from the main process (entrypoints/engine.py); its own
    # generator, so every other line keeps the time it had before this line was added
    t_sa = t + ms(2, 9, STARTUP_RNG)
    J.out(main, t_sa, f"[{stamp(t_sa)}] {server_args_line(role)}", STARTUP_RNG)
    t += ms(4500, 5200)
    kv_gb = (
        KV_POOL[role] * 80 * 2 * 128 * 2 / 2**30
    )  # K (or V): 80 layers, 2 KV heads per rank, dim 128, bf16
    after_weights = {"prefill": 45.61, "decode": 45.58}[role]
    avail = (after_weights + 33.33, after_weights, after_weights - 2 * kv_gb - 0.31)
    for k, p in enumerate(ranks):
        sg(p, t + ms(1, 30) * (k + 1), "Init torch distributed begin.", k)
    t += ms(2600, 3100)
    for k, p in enumerate(ranks):
        sg(p, t + ms(1, 30) * (k + 1), f"Init torch distributed ends. mem usage={0.86 + 0.01 * k:.2f} GB", k)
    t += ms(900, 1200)
    for k, p in enumerate(ranks):
        sg(p, t + ms(1, 20) * (k + 1), f"Load weight begin. avail mem={avail[0] - 0.01 * k:.2f} GB", k)
    t += ms(21000, 23000)
    for k, p in enumerate(ranks):
        sg(
            p,
            t + ms(10, 400) * (k + 1),
            f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
            f"avail mem={avail[1] - 0.01 * k:.2f} GB, mem usage=33.33 GB.",
            k,
        )
    t += ms(1700, 2000)
    for k, p in enumerate(ranks):
        sg(p, t + ms(1, 10) * (k + 1), "Using KV cache dtype: torch.bfloat16", k)
        sg(
            p,
            t + ms(20, 40) * (k + 1),
            f"KV Cache is allocated. #tokens: {KV_POOL[role]}, "
            f"K size: {kv_gb:.2f} GB, V size: {kv_gb:.2f} GB",
            k,
        )
        sg(p, t + ms(60, 90) * (k + 1), f"Memory pool end. avail mem={avail[2] - 0.01 * k:.2f} GB", k)
    t += ms(600, 900)
    if role == "decode":
        bs = [1, 2, 4, 8] + list(range(16, 161, 8))
        for k, p in enumerate(ranks):
            sg(
                p,
                t + ms(1, 9) * (k + 1),
                "Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={avail[2] - 0.01 * k - 0.47:.2f} GB",
                k,
            )
            sg(p, t + ms(10, 19) * (k + 1), f"Capture cuda graph bs {bs}", k)
        t += ms(14500, 15500)
        for k, p in enumerate(ranks):
            sg(
                p,
                t + ms(1, 40) * (k + 1),
                f"Capture cuda graph end. Time elapsed: {14.61 + 0.07 * k:.2f} s. "
                f"mem usage=1.64 GB. avail mem={avail[2] - 0.01 * k - 2.11:.2f} GB.",
                k,
            )
    t += ms(300, 500)
    free = avail[2] - (2.11 if role == "decode" else 0.0)
    sg(
        ranks[0],
        t,
        f"max_total_num_tokens={KV_POOL[role]}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests={4096 if role == 'prefill' else 2048}, context_len=131072, "
        f"available_gpu_mem={free:.2f} GB",
        0,
    )
    t += ms(900, 1400)
    for line in (
        f"Started server process [{main.pid}]",
        "Waiting for application startup.",
        "Application startup complete.",
        f"Uvicorn running on http://0.0.0.0:{PORT[role]} (Press CTRL+C to quit)",
    ):
        sg(main, t, f"INFO:     {line}")
        t += ms(0.2, 1.5)
    access(main, t + ms(900, 1100), rng.randint(32768, 60999), "GET", "/get_model_info", "200 OK")
    warm = READY - ms(700, 900)
    if role == "prefill":
        for k, p in enumerate(ranks):
            sg(p, warm - 400_000 + ms(0.2, 2.5) * k, fmt_prefill(1, 7, 0, 0.0, 0, 0, 0, 0.0), k)
    access(main, warm, rng.randint(32768, 60999), "POST", "/generate", "200 OK")
    return sg(
        main, READY + (0 if role == "prefill" else ms(3, 9)), "The server is fired up and ready to roll!"
    )[0]


SYSTEMD_IDS = {  # MESSAGE_ID and code location of each systemd message used here
    "stopping": ("de5b426a63be47a7b6ac3eaac82e2f6f", "src/core/job.c", 581, "job_emit_start_message"),
    "success": ("7ad2d189f7e94e70a38c781354912448", "src/core/unit.c", 5795, "unit_log_success"),
    "done": ("9d1aaa27d60140bd96365438aad20286", "src/core/job.c", 809, "job_emit_done_message"),
    "resources": ("ae8f7b866b0347b9af31fe1c80b127c0", "src/core/unit.c", 2430, "unit_log_resources"),
    "started": ("39f53479d3a045ac8e11786248231fbf", "src/core/job.c", 809, "job_emit_done_message"),
}


def systemd_msg(t: int, unit: str, msg: str, kind: str, extra: dict | None, inv: str) -> int:
    """A message from systemd (pid 1) about ``unit``, as journald stores it."""
    msg_id, code_file, code_line, code_func = SYSTEMD_IDS[kind]
    fields = {
        "_TRANSPORT": "journal", "PRIORITY": "6", "SYSLOG_FACILITY": "3", "SYSLOG_IDENTIFIER": "systemd",
        "TID": "1", "CODE_FILE": code_file, "CODE_LINE": str(code_line), "CODE_FUNC": code_func,
        "MESSAGE_ID": msg_id, "UNIT": unit, "INVOCATION_ID": inv, **{k: str(v) for k, v in (extra or {}).items()},
        "_PID": "1", "_UID": "0", "_GID": "0", "_COMM": "systemd", "_EXE": "/usr/lib/systemd/systemd",
        "_CMDLINE": "/sbin/init", "_SYSTEMD_CGROUP": "/init.scope", "_SYSTEMD_UNIT": "init.scope",
        "_SYSTEMD_SLICE": "-.slice", "_SOURCE_REALTIME_TIMESTAMP": str(t - ms(0.02, 0.08)), "MESSAGE": msg,
    }  # fmt: skip
    return J.add(t, fields)


def restart(role: str, t: int, job: int, cpu: str) -> tuple[int, int, int]:
    """``systemctl restart`` of one engine: Stopping, the old main's shutdown, Stopped, Started.

    Returns the times of 'Stopping', of the old main process's last line and of 'Started'.
    """
    unit, old, new = f"sglang-{role}.service", hexid(f"{role}-1-invocation"), hexid(f"{role}-2-invocation")
    job_fields = {"JOB_ID": job, "JOB_TYPE": "restart"}
    done = job_fields | {"JOB_RESULT": "done"}
    first = systemd_msg(t, unit, f"Stopping {unit} - {DESC[role]}...", "stopping", job_fields, old)
    main = P_MAIN if role == "prefill" else D_MAIN
    u = t + ms(2, 6)
    for line in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete.",
                 f"Finished server process [{main.pid}]"):  # fmt: skip
        gone = sg(main, u, f"INFO:     {line}")[0]
        u += ms(0.3, 40)
    u += ms(1100, 1500)
    systemd_msg(u, unit, f"{unit}: Deactivated successfully.", "success", None, old)
    systemd_msg(u + 41, unit, f"Stopped {unit} - {DESC[role]}.", "done", done, old)
    systemd_msg(
        u + 97, unit, f"{unit}: Consumed {cpu} CPU time.", "resources", {"CPU_USAGE_NSEC": cpu_ns(cpu)}, old
    )
    started = systemd_msg(u + ms(20, 60), unit, f"Started {unit} - {DESC[role]}.", "started", done, new)
    return first, gone, started


def cpu_ns(text: str) -> int:
    """Nanoseconds of a systemd CPU time like ``15h 41min 12.402s``."""
    total = 0.0
    for part in text.split():
        if part.endswith("min"):
            total += float(part[:-3]) * 60
        elif part.endswith("h"):
            total += float(part[:-1]) * 3600
        else:
            total += float(part[:-1])
    return round(total * 1e9)


DAEMONS = {  # unit: (SYSLOG_IDENTIFIER, _COMM, _EXE, _CMDLINE)
    "cron.service": ("CRON", "cron", "/usr/sbin/cron", "/usr/sbin/CRON -f -P"),
    "ssh.service": ("sshd", "sshd", "/usr/sbin/sshd", "sshd: ops [priv]"),
}


def syslog(t: int, unit: str, pid: int, facility: int, msg: str) -> None:
    """A message a daemon of ``unit`` sent through syslog(3)."""
    ident, comm, exe, cmdline = DAEMONS[unit]
    J.add(t, {
        "_TRANSPORT": "syslog", "PRIORITY": "6", "SYSLOG_FACILITY": str(facility), "SYSLOG_IDENTIFIER": ident,
        "SYSLOG_PID": str(pid), "SYSLOG_TIMESTAMP": datetime.fromtimestamp(t // 10**6, UTC).strftime("%b %d %H:%M:%S "),
        "_PID": str(pid), "_UID": "0", "_GID": "0", "_COMM": comm, "_EXE": exe, "_CMDLINE": cmdline,
        "_SYSTEMD_CGROUP": f"/system.slice/{unit}", "_SYSTEMD_UNIT": unit, "_SYSTEMD_SLICE": "system.slice",
        "_SYSTEMD_INVOCATION_ID": hexid(f"{unit}-inv"), "_SOURCE_REALTIME_TIMESTAMP": str(t - ms(0.05, 0.2)),
        "MESSAGE": msg,
    })  # fmt: skip


def kernel(t: int, msg: str) -> None:
    """A kernel ring-buffer message (no unit, no pid)."""
    J.add(t, {"_TRANSPORT": "kernel", "PRIORITY": "6", "SYSLOG_FACILITY": "0", "SYSLOG_IDENTIFIER": "kernel",
              "_SOURCE_MONOTONIC_TIMESTAMP": str(t - BOOT - ms(0.5, 3)), "MESSAGE": msg})  # fmt: skip


def unrelated() -> None:
    """sshd, cron and kernel lines that unit selection must leave out."""
    for t0, pid in ((at("21:25:01.126377"), 611203), (at("21:35:01.208154"), 640877)):
        syslog(
            t0,
            "cron.service",
            pid,
            10,
            "pam_unix(cron:session): session opened for user root(uid=0) by root(uid=0)",
        )
        syslog(
            t0 + 2113,
            "cron.service",
            pid + 1,
            9,
            "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
        )
        syslog(t0 + 61_448, "cron.service", pid, 10, "pam_unix(cron:session): session closed for user root")
    t = at("21:38:12.402916")
    syslog(t, "ssh.service", 652114, 4, "Accepted publickey for ops from 10.20.0.15 port 53122 ssh2: ED25519 "
           "SHA256:9kq3v2cZl0nQm0f1xH3o4yKkQ8rW2b3g5hJtU7sVbXo")  # fmt: skip
    syslog(t + 9_812, "ssh.service", 652114, 10,
           "pam_unix(sshd:session): session opened for user ops(uid=1000) by ops(uid=0)")  # fmt: skip
    perf = "perf: interrupt took too long ({} > {}), lowering kernel.perf_event_max_sample_rate to {}"
    kernel(at("21:29:13.551027"), perf.format(2512, 2500, 79500))
    kernel(at("21:41:07.913337"), perf.format(3141, 3140, 63500))


def incident() -> dict:
    """Write every journal entry of the incident into ``J``; return the true answers."""
    reqs = simulate()
    normal = [r for r in reqs if r.kind == "normal"]
    burst = [r for r in reqs if r.kind == "burst"]
    post = [r for r in reqs if r.kind == "post"]
    room_req = min(burst, key=lambda r: abs(r.abort - at("21:34:43.500")))
    ans: dict = {
        "room": room_req.room,
        "room_rid_prefill": room_req.rid_p,
        "room_rid_decode": room_req.rid_d,
        "room_request_id": room_req.request_id,
    }

    # router: every request starts; finishes where decode finished before the wedge
    for r in reqs:
        router_start(r)
        if r.dec_end is not None and (r.dec_end < WEDGE or (r.kind == "post" and r.dec_end < END)):
            router_finish(r, r.dec_end + ms(0.4, 1.6), 200)

    # engines: access lines of completed work
    for r in reqs:
        main_p, main_d = (P2_MAIN, D2_MAIN) if r.kind == "post" else (P_MAIN, D_MAIN)
        limit = END if r.kind == "post" else WEDGE
        if r.prefill_done is not None and r.prefill_done < limit:
            access(main_p, r.prefill_done + ms(0.3, 1.2), r.port_p, "POST", "/generate", "200 OK")
        if r.dec_end is not None and r.dec_end < limit:
            access(main_d, r.dec_end + ms(0.2, 0.9), r.port_d, "POST", "/generate", "200 OK")

    # batches
    by_t: dict[int, list[Req]] = {}
    for r in reqs:
        if r.batch_start is not None:
            by_t.setdefault(r.batch_start, []).append(r)
    pre_batches = sorted(by_t.items())
    old = [(t, g) for t, g in pre_batches if t < RESTART]
    new = [(t, g) for t, g in pre_batches if t > READY]
    ans["last_prefill"] = log_prefill(normal + burst + [r for r in reqs if r.kind == "wedge"], old, P_TP)
    ans["last_decode"] = log_decode(normal + burst, T0, WEDGE + 1, D_TP, WEDGE)
    log_prefill(post, new, P2_TP)
    log_decode(post, READY + 800_000, END, D2_TP, None)

    # health checks: every 10 s on both engines, also during the wedge
    ports = {"prefill": [41872, 41874], "decode": [41880, 41884]}
    health(P_MAIN, T0, RESTART, 3517, ports["prefill"])
    health(D_MAIN, T0, RESTART, 3519, ports["decode"])
    health(P2_MAIN, READY + 3_300_000, END, 0, [50214, 50220])
    health(D2_MAIN, READY + 3_300_000, END, 2, [50230, 50236])

    # the abort burst
    for r in burst:
        for main, rid in ((P_MAIN, r.rid_p), (D_MAIN, r.rid_d)):
            sg(
                main,
                r.abort + ms(0.4, 2.5),
                "[http_server] Error: Request is disconnected from the client side "
                f"(type 3). Abort request obj.rid='{rid}'",
            )
        for k, p in enumerate(P_TP):
            sg(
                p,
                r.abort + ms(4, 12),
                f"Prefill bootstrap failed for request rank={k} req.rid='{r.rid_p}' "
                f"req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room={r.room}): "
                "Aborted by AbortReq.",
                k,
            )
        for k, p in enumerate(D_TP):
            sg(
                p,
                r.abort + ms(5, 14),
                f"Decode transfer failed for request rank={k} decode_req.req.rid='{r.rid_d}' "
                f"decode_req.req.bootstrap_room={r.room} with exception KVTransferError(bootstrap_room={r.room}): "
                "Aborted by AbortReq.",
                k,
            )
    ans["n_burst"] = len(burst)

    # the transfer_infos assertion on prefill TP0, TP1, TP3 (not TP2)
    conn = f"{SITE}/sglang/srt/disaggregation/nixl/conn.py"
    ans["assertions"] = {}
    for k, delay in ((0, 38.7), (1, 43.2), (3, 51.9)):
        t = room_req.abort + ms(delay, delay + 0.5)
        text = (
            f"[{stamp(t)} TP{k}] Unexpected transfer worker error for room "
            f"{room_req.room}\nTraceback (most recent call last):\n"
            f'  File "{conn}", line 702, in transfer_worker\n'
            "    assert room in self.transfer_infos\nAssertionError"
        )
        ans["assertions"][k] = J.out(P_TP[k], t, text)[0]

    # the soft watchdog on every decode rank, 300 s after the last decode batch
    ans["watchdog"] = {}
    for k, p in enumerate(D_TP):
        t = WATCHDOG + ms(20, 30) * k + ms(450, 600)
        dump = pyspy_dump("decode", k, p.pid, watchdog_firing=True)
        first = sg(p, t, f"Pyspy dump for PID {p.pid} (py-spy dump --native --pid {p.pid}):\n{dump}", k)[0]
        timeout = sg(
            p, t + ms(0.2, 0.5), "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)", k
        )
        ans["watchdog"][k] = (first, timeout[0])

    # the hand-taken dumps
    dumps = {}
    for when in (DUMP_1, DUMP_2):
        for role, ranks in (("prefill", P_TP), ("decode", D_TP)):
            if role == "prefill" and when == DUMP_2:
                continue
            for k, p in enumerate(ranks):
                dumps[f"{role}_tp{k}_{datetime.fromtimestamp(when // 1_000_000, UTC):%H%M%S}.txt"] = (
                    pyspy_dump(role, k, p.pid)
                )

    # restart of both engines and their start-up
    ans["restart"], decode_gone, started_d = restart("decode", RESTART, 7341, "15h 41min 12.402s")
    ans["restart_prefill"], _, started_p = restart(
        "prefill", RESTART + ms(0.9, 1.3), 7342, "11h 2min 48.117s"
    )
    ans["started"] = (started_d, started_p)
    ans["ready"] = (
        startup(P2_MAIN, P2_TP, "prefill", started_p),
        startup(D2_MAIN, D2_TP, "decode", started_d),
    )

    # router: requests still open when the old decode process exits fail with 502
    ans["failed_502"] = 0
    for r in reqs:
        if r.kind in ("normal", "wedge") and (r.dec_end is None or r.dec_end >= WEDGE):
            t = decode_gone + ms(0.3, 3)
            router(
                t,
                "ERROR",
                r,
                "sglang_router_rs::routers::http::pd_router",
                "src/routers/http/pd_router.rs:1127",
                "Decode request failed decode_url=http://127.0.0.1:30001 "
                "error=error sending request for url (http://127.0.0.1:30001/generate)",
            )
            router_finish(r, t + ms(0.05, 0.2), 502)
            ans["failed_502"] += 1
    unrelated()
    # the quiet minutes before the load, and the request log, last and each with its own generators:
    # every line above stays as it was
    with own_generators(SEED + 19):
        quiet = quiet_minutes()
    receives, finishes = request_log(reqs)
    with own_generators(SEED + 21):
        q_receives, q_finishes = request_log(quiet)
    ans["quiet"] = quiet
    ans["request_log"] = request_truth(reqs + quiet, receives + q_receives, finishes + q_finishes)
    return ans | {"dumps": dumps}


@contextmanager
def own_generators(seed: int):
    """Within the block, ``rng`` and ``RQ`` (the request log's generator) are fresh generators seeded from
    ``seed``: lines written there take no number from the sequences the rest of the sample draws from."""
    global rng, RQ
    saved = rng, RQ
    rng, RQ = random.Random(seed), random.Random(seed + 1)
    try:
        yield
    finally:
        rng, RQ = saved


def quiet_minutes() -> list[Req]:
    """The two minutes before the load (QUIET to T0): one client sends a request, waits for its answer
    (60-240 tokens), thinks 1.5-6 s, sends the next; the router checks /health every 10 s as it does
    later. Writes the router's, both engines' access and batch lines of these requests (their
    ``--log-requests`` lines come with the others) and returns them; each runs alone on decode."""
    quiet, a = [], QUIET + ms(4000, 9000)
    while True:
        r = make_req("quiet", a)
        r.output = rng.randint(60, 240)
        r.ready = r.a + ms(25, 90)
        prefill_batches([r], QUIET, T0)
        r.prefill_done = r.batch_end + ms(40, 160)
        r.dec_start = r.prefill_done + ms(5, 25)
        r.dec_end = r.dec_start + round(r.output / 15 * 1_000_000)
        if r.dec_end > T0 - 4_000_000:
            break
        quiet.append(r)
        a = r.dec_end + ms(1500, 6000)
    for r in quiet:
        router_start(r)
        router_finish(r, r.dec_end + ms(0.4, 1.6), 200)
        access(P_MAIN, r.prefill_done + ms(0.3, 1.2), r.port_p, "POST", "/generate", "200 OK")
        access(D_MAIN, r.dec_end + ms(0.2, 0.9), r.port_d, "POST", "/generate", "200 OK")
    log_prefill(quiet, [(r.batch_start, [r]) for r in quiet], P_TP)
    log_decode(quiet, QUIET, T0 - 1_000_000, D_TP, None)
    health(P_MAIN, QUIET, T0, 3517, [41872, 41874])
    health(D_MAIN, QUIET, T0, 3519, [41880, 41884])
    return quiet


# ----------------------------------------------------------------------------- --log-requests (decode)

RQ = random.Random(SEED + 18)  # the request log's own generator: the lines above keep their random sequence
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no more out up into do any your "
    "what has man could other than then now look only come its over think also back after use two how our work "
    "first well way even new want because these give day most us weather flight hotel invoice order refund"
).split()
TOOLS = (
    "You are an assistant with tools. Call a tool when you need data. Tools: get_weather(city: str), "
    "search_flights(origin: str, destination: str, date: str), lookup_order(order_id: str), "
    "create_ticket(title: str, body: str).\n\n"
)
LEAKS = [  # answers whose tool call came back as text (research notes F19), as a client saw them
    "Let me check that for you.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
    '```json\n{{"city": "{city}"}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="lookup_order">\n<｜DSML｜parameter name="order_id" '
    'string="true">{order}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
    "I'll search for flights.<|tool▁calls▁begin|><|tool▁call▁begin|>function<|tool▁sep|>search_flights\n"
    '```json\n{{"origin": "SFO", "destination": "{city}", "date": "2025-11-0{day}"}}\n```<|tool▁call▁end|>'
    "<|tool▁calls▁end|>",
]
CITIES = ["Paris", "Lisbon", "Osaka", "Denver", "Nairobi", "Oslo", "Lima", "Hanoi"]


def words(n_chars: int) -> str:
    """Filler prose of about ``n_chars`` characters from the request log's generator."""
    out, size = [], 0
    while size < n_chars:
        w = RQ.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out).capitalize() + "."


def logged(value: object) -> str:
    """A value as SGLang's request logger prints it at level 2 (``_dataclass_to_string_truncated``):
    a string over 2048 characters as ``'head' ... 'tail'``, a list over 2048 items likewise."""
    if isinstance(value, str) and len(value) > 2048:
        return f"{value[:1024]!r} ... {value[-1024:]!r}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"'{k}': {logged(v)}" for k, v in value.items()) + "}"
    return repr(value) if isinstance(value, str) else str(value)


def gen_input(r: Req, prompt: str) -> str:
    """``GenerateReqInput(…)`` as the decode engine's request logger prints it (fields of SGLang late 2025)."""
    fields = {
        "text": prompt, "input_ids": None, "input_embeds": None, "image_data": None, "video_data": None,
        "audio_data": None,
        "sampling_params": {"temperature": 0.6, "top_p": 0.9, "max_new_tokens": 1024, "stop": None},
        "rid": r.rid_d, "return_logprob": False, "logprob_start_len": -1, "top_logprobs_num": 0,
        "token_ids_logprob": None, "return_text_in_logprobs": False, "stream": False, "log_metrics": True,
        "return_hidden_states": False, "modalities": [], "session_params": None, "lora_path": None,
        "lora_id": None, "custom_logit_processor": None, "bootstrap_host": "127.0.0.1", "bootstrap_port": 8998,
        "bootstrap_room": r.room, "bootstrap_pair_key": None, "data_parallel_rank": None, "background": False,
        "conversation_id": None, "priority": None, "extra_key": None, "no_logs": False, "custom_labels": None,
        "return_bytes": False, "return_entropy": False,
    }  # fmt: skip
    return "GenerateReqInput(" + ", ".join(f"{k}={logged(v)}" for k, v in fields.items()) + ")"


def decode_running() -> list[tuple[int, int]]:
    """(journal time, #running-req) of every decode batch line written, in time order (TP ranks of the
    one DP group log the same batch: the last line of any rank is the engine's count)."""
    out = []
    for t, f in J.entries:
        msg = f["MESSAGE"]
        if f.get("_SYSTEMD_UNIT") == "sglang-decode.service" and "] Decode batch, #running-req: " in msg:
            out.append((t, int(msg.split("#running-req: ", 1)[1].split(",", 1)[0])))
    return sorted(out)


def running_at(batches: list[tuple[int, int]], t: int) -> int | None:
    """#running-req of the last decode batch line at or before ``t`` within 60 s (the query's rule)."""
    before = [(bt, n) for bt, n in batches if bt <= t]
    return before[-1][1] if before and t - before[-1][0] <= 60_000_000 else None


def request_log(reqs: list[Req]) -> tuple[int, list[tuple[int, Req, str]]]:
    """``--log-requests --log-requests-level 2`` lines of the decode engine's HTTP server: a ``Receive``
    for every request the router forwarded, a ``Finish`` for each answer decode returned. Under load
    (17 or more requests running, and a few at 13-16) some answers carry DeepSeek tool-call markup as
    text; with fewer running, none. Returns the number of ``Receive`` lines and (journal time, request,
    returned text) of each ``Finish`` line."""
    batches = decode_running()
    receives, finishes = 0, []
    for r in sorted(reqs, key=lambda x: x.a):
        main = D2_MAIN if r.kind == "post" else D_MAIN
        prompt = TOOLS + words(RQ.randint(900, 3600))
        obj = gen_input(r, prompt)
        J.out(main, r.a + ms(2, 9, RQ), f"[{stamp(r.a)}] Receive: obj={obj}", RQ)
        receives += 1
        limit = END if r.kind == "post" else WEDGE
        if r.dec_end is None or r.dec_end >= limit:
            continue  # aborted by its client, or stuck in the wedge: no Finish
        t = r.dec_end - ms(0.05, 0.15, RQ)
        n = running_at(batches, t) or 0
        leak = (n >= 17 and RQ.random() < 0.22) or (13 <= n <= 16 and RQ.random() < 0.02)
        if leak:
            text = RQ.choice(LEAKS).format(
                city=RQ.choice(CITIES), order=RQ.randint(100000, 999999), day=RQ.randint(1, 9)
            )
            reason = {"type": "stop", "matched": 128009}
        else:
            text = words(r.output * 4)
            reason = (
                {"type": "stop", "matched": 128009}
                if RQ.random() < 0.9
                else {"type": "length", "length": 1024}
            )
        meta = {
            "id": r.rid_d, "finish_reason": reason, "prompt_tokens": r.prompt, "weight_version": "default",
            "total_retractions": 0, "completion_tokens": r.output, "cached_tokens": r.cached,
            "e2e_latency": round((t - r.a) / 1e6 + RQ.uniform(0.0001, 0.0009), 12),
        }  # fmt: skip
        ids = [RQ.randint(1000, 127999) for _ in range(r.output)]
        out = "{'text': " + logged(text) + f", 'output_ids': {ids}, 'meta_info': {logged(meta)}}}"
        at_t = J.out(main, t, f"[{stamp(t)}] Finish: obj={obj}, out={out}", RQ)[0]
        finishes.append((at_t, r, text))
    return receives, finishes


def request_truth(reqs: list[Req], receives: int, finishes: list[tuple[int, Req, str]]) -> dict:
    """The request log's true answers, from the lines as written: concurrency at each ``Finish`` line's
    own journal time (the last decode batch line at or before it), answers and leaks per band, and why
    each ``Receive`` without a ``Finish`` has none."""
    batches = decode_running()
    bands = {"0-1": (0, 1), "2-4": (2, 4), "5-16": (5, 16), "17+": (17, 10**9)}
    per = {b: [0, 0] for b in bands}
    leak_rows = []
    for at_t, r, text in finishes:
        n = running_at(batches, at_t)
        band = next(b for b, (lo, hi) in bands.items() if lo <= n <= hi)
        leaked = "<｜" in text or "<|tool" in text
        per[band][0] += 1
        per[band][1] += leaked
        if leaked:
            leak_rows.append((at_t, r.rid_d, n, text))
    answered = {r.rid_d for _, r, _ in finishes}
    open_by = {"burst": 0, "wedge": 0, "post": 0}
    for r in reqs:
        if r.rid_d not in answered:
            open_by["post" if r.kind == "post" else "burst" if r.kind == "burst" else "wedge"] += 1
    return {
        "receives": receives,
        "finishes": len(finishes),
        "per_band": per,
        "leaks": sorted(leak_rows),
        "open": open_by,
    }


# ----------------------------------------------------------------------------- outputs


def write_export(path: Path) -> int:
    """Write all entries, in time order, as journal export format; returns the entry count."""
    with path.open("w", encoding="utf-8") as f:
        for _, fields in sorted(J.entries, key=lambda e: e[0]):
            for key, value in fields.items():
                assert "\n" not in value and all(ord(c) >= 32 for c in value), (key, value)
                f.write(f"{key}={value}\n")
            f.write("\n")
    return len(J.entries)


def build_journal(export: Path, out_dir: Path) -> bool:
    """Build real journal files from ``export`` with systemd-journal-remote; False if it is missing.

    journal-remote sizes its files from the file system it writes to, so the files are written on a small
    tmpfs (in a private mount namespace, where /etc/machine-id is also replaced by ours): the file fills up,
    journal-remote rotates it, and the result is one archived ``system@….journal`` plus ``system.journal``,
    as in /var/log/journal. Without unshare/mount rights it writes one system.journal in place.
    """
    remote = shutil.which("systemd-journal-remote") or "/lib/systemd/systemd-journal-remote"
    if not Path(remote).exists() or not shutil.which("journalctl"):
        print(
            "systemd-journal-remote or journalctl missing: binary journal and journal.json NOT rebuilt "
            "(apt-get install systemd-journal-remote)"
        )
        return False
    target = out_dir / MACHINE_ID
    shutil.rmtree(out_dir, ignore_errors=True)
    target.mkdir(parents=True)
    env = os.environ | {"SYSTEMD_JOURNAL_COMPACT": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        mid = Path(tmp) / "machine-id"
        mid.write_text(MACHINE_ID + "\n")
        fs = Path(tmp) / "fs"
        fs.mkdir()
        script = (
            f"mount -t tmpfs -o size={JOURNAL_FS} tmpfs {fs} && mount --bind {mid} /etc/machine-id && "
            f"{remote} --compress=no --output={fs}/system.journal - < {export} && cp {fs}/*.journal {target}/"
        )
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            print(f"unshare/mount not possible ({done.stderr.strip()[:200]}); writing one system.journal")
            subprocess.run(
                [remote, "--compress=no", f"--output={target}/system.journal", "-"],
                env=env,
                stdin=export.open("rb"),
                check=True,
                capture_output=True,
            )
    for path in target.iterdir():
        path.chmod(0o644)  # journald writes 0640; readable for whoever checks the repository out
    return True


def journal_counts(journal_dir: Path) -> dict[str, int]:
    """Entries per _SYSTEMD_UNIT (kernel messages as ``(kernel)``), read back with journalctl."""
    text = subprocess.run(
        ["journalctl", "--directory", str(journal_dir), "-o", "json", "--no-pager"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        e = json.loads(line)
        key = e.get("_SYSTEMD_UNIT") or f"({e.get('_TRANSPORT')})"
        counts[key] = counts.get(key, 0) + 1
    return counts


def archive_info(journal_dir: Path) -> tuple[int, int] | None:
    """Entries in the archived journal file and the time of its last one (None if there is no such file)."""
    files = sorted((journal_dir / MACHINE_ID).glob("system@*.journal"))
    if not files:
        return None
    text = subprocess.run(
        ["journalctl", "--file", str(files[0]), "-o", "export", "--output-fields=MESSAGE"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stamps = [int(x.split("=", 1)[1]) for x in text.splitlines() if x.startswith("__REALTIME_TIMESTAMP=")]
    return len(stamps), max(stamps)


def unit_counts(journal_dir: Path, counts: dict[str, int]) -> dict[str, int]:
    """What ``journalctl -u UNIT`` finds for each unit with a count in ``counts``."""
    out = {}
    for unit in counts:
        if unit.endswith((".service", ".scope")):
            text = subprocess.run(
                ["journalctl", "--directory", str(journal_dir), "-u", unit, "-o", "export"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            out[unit] = text.count("\n__CURSOR=") + text.startswith("__CURSOR=")
    return out


def main() -> None:
    """Rebuild everything in sample_logs/."""
    ans = incident()
    dumps = ans.pop("dumps")
    pyspy = HERE / "pyspy"
    shutil.rmtree(pyspy, ignore_errors=True)
    pyspy.mkdir()
    for name, text in dumps.items():
        (pyspy / name).write_text(text)
    export = HERE / "journal.export"
    total = write_export(export)
    router_lines = [
        f["MESSAGE"]
        for _, f in sorted(J.entries, key=lambda e: e[0])
        if f.get("_SYSTEMD_UNIT") == "sglang-router.service"
    ]
    (HERE / "router.log").write_text("\n".join(router_lines) + "\n")
    counts: dict[str, int] = {}
    for _, f in J.entries:
        key = f.get("_SYSTEMD_UNIT") or f"({f['_TRANSPORT']})"
        counts[key] = counts.get(key, 0) + 1
    built = build_journal(export, HERE / "journal")
    if built:
        with (HERE / "journal.json").open("w") as f:
            subprocess.run(
                ["journalctl", "--directory", str(HERE / "journal"), "-o", "json", "--all", "--no-pager"],
                stdout=f,
                check=True,
            )
        back = journal_counts(HERE / "journal")
        assert back == counts, (back, counts)
        text = subprocess.run(
            ["journalctl", "--directory", str(HERE / "journal"), "-o", "export"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        cursors = sum(1 for line in text.splitlines() if line.startswith("__CURSOR="))
        assert cursors == total, (cursors, total)
        print(
            f"journal: {total} entries read back, files: "
            f"{sorted(p.name for p in (HERE / 'journal' / MACHINE_ID).iterdir())}"
        )
    u_counts = unit_counts(HERE / "journal", counts) if built else {}
    archive = archive_info(HERE / "journal") if built else None
    (HERE / "README.md").write_text(readme(ans, counts, u_counts, total, dumps, archive))
    print(f"wrote {total} entries, {len(router_lines)} router lines, {len(dumps)} py-spy dumps")


def messages(unit: str | None = None, pid: int | None = None, contains: str = "") -> list[tuple[int, str]]:
    """(time, MESSAGE) of the entries of ``unit``/``pid`` whose message contains ``contains``."""
    return sorted(
        (t, f["MESSAGE"])
        for t, f in J.entries
        if (unit is None or f.get("_SYSTEMD_UNIT") == unit)
        and (pid is None or f.get("_PID") == str(pid))
        and contains in f["MESSAGE"]
    )


def when(t: int) -> str:
    """A time for the README: journal time with µs, and the second the line prints."""
    return f"`{iso(t)}`"


def readme(
    ans: dict,
    counts: dict[str, int],
    u_counts: dict[str, int],
    total: int,
    dumps: dict[str, str],
    archive: tuple[int, int] | None,
) -> str:
    """README.md: README.template.md filled with the true answers of this build."""
    pu, du, ru = "sglang-prefill.service", "sglang-decode.service", "sglang-router.service"
    room, n_burst, rl, quiet = ans["room"], ans["n_burst"], ans["request_log"], ans["quiet"]
    sa_lines = {
        r: messages(f"sglang-{r}.service", contains="server_args=ServerArgs(") for r in ("prefill", "decode")
    }
    engine_entries = sorted(t for t, f in J.entries if f.get("_SYSTEMD_UNIT") in (pu, du, ru))
    quiet_first = messages(ru, contains=quiet[0].request_id)[0][0]
    quiet_last = messages(du, contains=f"'id': '{quiet[-1].rid_d}'")[0][0]
    disc = messages(contains="[http_server] Error: Request is disconnected")
    pboot, dxfer = (
        messages(pu, contains="Prefill bootstrap failed"),
        messages(du, contains="Decode transfer failed"),
    )
    aborts = sorted(disc + pboot + dxfer)
    for_room = [
        x
        for x in aborts
        if str(room) in x[1] or ans["room_rid_prefill"] in x[1] or ans["room_rid_decode"] in x[1]
    ]
    wedge_health = {
        u: sum(WEDGE < t < RESTART for t, _ in messages(u, contains='"GET /health HTTP/1.1" 200'))
        for u in (pu, du)
    }
    engines = {"prefill": (P_MAIN, P_TP, P2_MAIN, P2_TP), "decode": (D_MAIN, D_TP, D2_MAIN, D2_TP)}
    rows = [
        ("host", f"`{HOST}`"),
        ("machine id (`_MACHINE_ID`, journal directory)", f"`{MACHINE_ID}`"),
        ("boot id (`_BOOT_ID`, one boot)", f"`{BOOT_ID}`"),
        (
            "units",
            f"`{pu}`, `{du}`, `{ru}`; unrelated: `ssh.service`, `cron.service`, kernel (no unit); "
            "systemd's own messages: `init.scope`",
        ),
        ("clock", "UTC (SGLang's printed local time = UTC)"),
        (
            "first / last entry of the three SGLang units",
            f"{when(engine_entries[0])} / {when(engine_entries[-1])}",
        ),
    ]
    for role, (main, tps, main2, tps2) in engines.items():
        rows += [
            (
                f"{role} main process (HTTP server, tokenizer; `_COMM=python3`)",
                f"`{main.pid}`, after the restart `{main2.pid}`",
            ),
            (
                f"{role} scheduler pids before the restart",
                ", ".join(f"TP{k} `{p.pid}`" for k, p in enumerate(tps)),
            ),
            (
                f"{role} scheduler pids after the restart",
                ", ".join(f"TP{k} `{p.pid}`" for k, p in enumerate(tps2)),
            ),
        ]
    rows += [
        ("router pid", f"`{ROUTER.pid}` (not restarted)"),
        ("the room R", f"`{room}`"),
        ("rid linked to R on prefill", f"`{ans['room_rid_prefill']}`"),
        ("rid linked to R on decode", f"`{ans['room_rid_decode']}`"),
        (
            "router request of R",
            f"`{ans['room_request_id']}`: known from the generator only (the router logs neither room nor rid)",
        ),
        ("prefill ranks that assert for R", "TP0, TP1, TP3 (not TP2)"),
        *(
            (f"assertion on prefill TP{k} (`Unexpected transfer worker error for room R`)", when(t))
            for k, t in sorted(ans["assertions"].items())
        ),
        (
            "first abort line for room R (precedes the assertions)",
            f"{when(for_room[0][0])}: `{for_room[0][1]}`",
        ),
        (
            "aborts in the burst",
            f"{n_burst} client requests: {len(disc)} `[http_server] ... Abort request` lines ({n_burst} per engine), "
            f"{len(pboot)} `Prefill bootstrap failed` (4 ranks x {n_burst}), {len(dxfer)} `Decode transfer failed` (4 x {n_burst})",
        ),
        (
            "burst: first / last client disconnect (`[http_server]` line)",
            f"{when(disc[0][0])} / {when(disc[-1][0])}",
        ),
        ("burst: first / last abort line of any kind", f"{when(aborts[0][0])} / {when(aborts[-1][0])}"),
        *((f"last decode batch, decode TP{k}", when(t)) for k, t in sorted(ans["last_decode"].items())),
        *(
            (f"last prefill batch before the restart, prefill TP{k}", when(t))
            for k, t in sorted(ans["last_prefill"].items())
        ),
        *(
            (
                f"decode TP{k} soft watchdog: `Pyspy dump for PID` / `Scheduler watchdog timeout`",
                f"{when(a)} / {when(b)}",
            )
            for k, (a, b) in sorted(ans["watchdog"].items())
        ),
        (
            "restart issued (`Stopping sglang-decode.service ...`; prefill's `Stopping`)",
            f"{when(ans['restart'])}; {when(ans['restart_prefill'])}",
        ),
        (
            "new processes started (`Started ...`, decode / prefill)",
            f"{when(ans['started'][0])} / {when(ans['started'][1])}",
        ),
        (
            "`server_args=ServerArgs(...)` (new main process, prefill / decode)",
            f"{when(sa_lines['prefill'][0][0])} (pid `{P2_MAIN.pid}`) / {when(sa_lines['decode'][0][0])} "
            f"(pid `{D2_MAIN.pid}`); one line each, none from the first processes",
        ),
        (
            "healthy (`The server is fired up and ready to roll!`, prefill / decode)",
            f"{when(ans['ready'][0])} / {when(ans['ready'][1])}",
        ),
        (
            "`/health` during the wedge",
            f"`200 OK` on both engines: {wedge_health[pu]} lines on prefill, {wedge_health[du]} on decode "
            "between the last decode batch and the restart",
        ),
        (
            "requests the router failed with 502 at the restart",
            f"{ans['failed_502']} (`Decode request failed ...` and `request failed with server error`)",
        ),
    ]
    nccl = "NCCL all_reduce in the model forward (`tensor_model_parallel_all_reduce`, `{}`), thread active"
    classes = {("prefill", k): nccl.format("forward_extend") for k in range(4)}
    classes |= {("decode", 2): nccl.format("forward_decode"), ("decode", 3): nccl.format("forward_decode")}
    classes[("decode", 0)] = (
        "gloo broadcast in `recv_requests` (`broadcast_pyobj`, TP0 is the source), thread idle"
    )
    classes[("decode", 1)] = "gloo broadcast in `recv_requests` (`broadcast_pyobj`, receiving), thread idle"
    samples = [
        ("prefill batch", messages(pu, P_TP[0].pid, "Prefill batch")[10][1]),
        ("decode batch", messages(du, D_TP[0].pid, "Decode batch")[10][1]),
        ("uvicorn access", messages(du, D_MAIN.pid, '"POST /generate')[0][1]),
        ("health check", messages(pu, P_MAIN.pid, "/health")[0][1]),
        ("client disconnect (main process)", disc[0][1]),
        ("prefill abort", pboot[0][1]),
        ("decode abort", dxfer[0][1]),
        (
            "transfer_infos assertion, first of its 5 lines",
            messages(pu, P_TP[0].pid, "Unexpected transfer")[0][1],
        ),
        ("watchdog's py-spy header", messages(du, D_TP[0].pid, "Pyspy dump")[0][1]),
        ("soft watchdog", messages(du, D_TP[0].pid, "watchdog timeout")[0][1]),
        ("router request start", messages(ru, contains="started processing")[0][1]),
        ("router response", messages(ru, contains="finished processing")[0][1]),
        ("router 502", messages(ru, contains="request failed with server error")[0][1]),
        ("router decode error", messages(ru, contains="Decode request failed")[0][1]),
        ("systemd (pid 1)", messages("init.scope", contains="Stopping")[0][1]),
        ("ready", messages(pu, P2_MAIN.pid, "fired up")[0][1]),
    ]
    sizes = sorted(text.count("\n") for text in dumps.values())
    split = (
        f"The archived file holds the first {archive[0]} entries (to {iso(archive[1])}): the incident is spread over both files. "
        if archive
        else ""
    )
    values = {
        "n_burst": n_burst,
        "disc_first": iso(disc[0][0]),
        "disc_last": iso(disc[-1][0]),
        "room": room,
        "last_decode": iso(ans["last_decode"][0]),
        "last_prefill": iso(max(ans["last_prefill"].values())),
        "failed_502": ans["failed_502"],
        "ready": iso(ans["ready"][0]),
        "machine_id": MACHINE_ID,
        "archive_split": split,
        "total": total,
        "router_lines": counts[ru],
        "n_dumps": len(dumps),
        "answers": "\n".join(f"| {q} | {a} |" for q, a in rows),
        "pyspy": "\n".join(
            f"| {role} TP{k} | `{p.pid}` | {classes[(role, k)]} |"
            for role in engines
            for k, p in enumerate(engines[role][1])
        ),
        "counts": "\n".join(f"| `{u}` | {counts[u]} | {u_counts.get(u, '-')} |" for u in sorted(counts)),
        "formats": "\n".join(f"- {name}:\n  ```\n  {line}\n  ```" for name, line in samples),
        "leaks": len(rl["leaks"]),
        "finishes": rl["finishes"],
        "rl_answers": "\n".join(
            f"| {q} | {a} |"
            for q, a in (
                ("`Receive` lines (decode main process, pids 2842 and 918234)", rl["receives"]),
                ("of them, in the quiet minutes (one at a time, all answered)", len(quiet)),
                ("`Finish` lines", rl["finishes"]),
                (
                    "`Receive` without a `Finish`",
                    f"{rl['receives'] - rl['finishes']}: {rl['open']['burst']} aborted by their client, "
                    f"{rl['open']['wedge']} caught in the wedge, {rl['open']['post']} still running when the data ends",
                ),
                ("answers with tool-call markup", len(rl["leaks"])),
                (
                    "first / last answer with markup",
                    f"{when(rl['leaks'][0][0])} / {when(rl['leaks'][-1][0])}",
                ),
            )
        ),  # fmt: skip
        "rl_leaks": "\n".join(
            f"| `{rid}` | {when(t)} | {n} | {'deepseek_dsml' if 'DSML' in text else 'deepseek_tool_calls'} |"
            for t, rid, n, text in rl["leaks"]
        ),
        "rl_bands": "\n".join(
            f"| {band} | {n} | {k} | {'-' if n == 0 else f'{k / n:.4f}'} |"
            for band, (n, k) in rl["per_band"].items()
        ),
        "quiet_n": len(quiet),
        "quiet_first": iso(quiet_first),
        "quiet_last": iso(quiet_last),
        "sa_chars": len(sa_lines["prefill"][0][1]),
        "sa_fields": len(repr_fields(SERVER_ARGS_0_5_8_POST1.replace("\n", " ").strip())),
        "min_leak_running": min(n for _, _, n, _ in rl["leaks"]),
        "config_rows": "\n".join(
            f"| {role} | `{pid}` | {origin} | "
            + " | ".join(str((SERVER_ARGS_VALUES | SERVER_ARGS_ROLE[role])[k]) for k in CONFIG_SHOWN)
            + f" | {'; '.join(cmdline_disagreements(role)) or 'none'} |"
            for role, pid, origin in (
                ("prefill", P_MAIN.pid, "command line only"),
                ("decode", D_MAIN.pid, "command line only"),
                ("prefill", P2_MAIN.pid, "server_args line and command line"),
                ("decode", D2_MAIN.pid, "server_args line and command line"),
            )
        ),
        "dump_min": sizes[0],
        "dump_max": sizes[-1],
    }
    return string.Template((HERE / "README.template.md").read_text()).substitute(values)


if __name__ == "__main__":
    main()
