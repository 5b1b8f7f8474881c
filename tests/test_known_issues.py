"""The config table, the server_args / command-line parsers, and the known bug families (issue 17)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

import polars as pl
import pytest
from conftest import CASES, ROOT, SAMPLE, case_group, ingested, need_journalctl, sample_with_dumps

from logcorr.analysis import known_issues, saved
from logcorr.ingest import NothingReadError, ingest
from logcorr.inputs import containers
from logcorr.inputs.sniff import sniff
from logcorr.inputs.source import ReadOptions
from logcorr.parsers.server_args import parse_cmdline, parse_server_args

SA = CASES / "server_args"


def test_server_args_line_of_sglang_0_5_8_post1_pd_decode_parses_every_field():
    p = parse_server_args((SA / "02_v0.5.8.post1_pd_decode_mooncake.log").read_text())
    assert p.complete and p.notes == []
    assert len(p.fields) == 325
    f = p.fields
    assert (f["tp_size"], f["dp_size"], f["nnodes"], f["disaggregation_mode"]) == (16, 1, 2, "decode")
    assert f["disaggregation_transfer_backend"] == "mooncake" and f["disable_overlap_schedule"] is False
    assert f["disaggregation_ib_device"] == "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"
    assert f["cuda_graph_bs"][:4] == [1, 2, 4, 8] and f["mm_process_config"] == {}
    assert f["model_loader_extra_config"] == "{}" and f["mem_fraction_static"] == 0.8
    assert f["forward_hooks"] is None and list(f)[-1] == "forward_hooks"


def test_server_args_line_of_sglang_2026_02_rocm_parses_every_field():
    p = parse_server_args((SA / "03_2026-02_glm5_rocm_tp8.log").read_text())
    assert p.complete and len(p.fields) == 327
    assert (
        p.fields["tp_size"] == 8
        and p.fields["attn_cp_size"] == 1
        and p.fields["kv_cache_dtype"] == "fp8_e4m3"
    )
    assert p.fields["enable_hierarchical_cache"] is False and p.fields["watchdog_timeout"] == 300


def test_cut_server_args_line_of_sglang_0_2_keeps_what_it_can_and_says_so():
    p = parse_server_args((SA / "01_v0.2_issue1100_cut.log").read_text())
    assert not p.complete
    assert (
        len(p.fields) == 23
        and p.fields["tp_size"] == 2
        and p.fields["additional_ports"] == [8001, 8002, 8003, 8004]
    )
    assert p.notes == ["line cut short: 23 fields read, the last complete one tp_size"]


def test_malformed_and_nested_values_never_raise():
    p = parse_server_args(
        "x server_args=ServerArgs(a=1, b=Foo(c='x', d=[1, (2, 3)]), e=<E.X: 1>, f=PosixPath('/p'), g=-inf)"
    )
    assert p.complete
    assert p.fields["b"] == {"__class__": "Foo", "c": "x", "d": [1, [2, 3]]}
    assert p.fields["e"] == "<E.X: 1>" and p.fields["f"] == {"__class__": "PosixPath", "args": ["/p"]}
    for text in (
        "server_args=ServerArgs(a='unterminated",
        "server_args=ServerArgs(a=@@@, b=2)",
        "",
        "no line",
    ):
        assert not parse_server_args(text).complete
    assert parse_server_args("server_args=ServerArgs(a=@@@, b=2)").fields == {"a": "@@@", "b": 2}


def test_command_line_prefixes_values_and_booleans():
    c = parse_cmdline(
        "/venv/bin/python3 -m sglang.launch_server --model-path /m --tp 8 --dp=2 --pp 2 --ep 4"
        " --disable-overlap-schedule --enable-dp-attention --cuda-graph-bs 1 2 4 --watchdog-timeout 3600"
    )
    f = c.fields
    assert (f["tp_size"], f["dp_size"], f["ep_size"], f["watchdog_timeout"]) == (8, 2, 4, 3600.0)
    assert f["disable_overlap_schedule"] is True and f["enable_dp_attention"] is True
    assert f["cuda_graph_bs"] == [1, 2, 4] and f["pp"] == 2
    assert c.notes == [
        "--pp: ambiguous prefix of --pp-async-batch-depth, --pp-max-micro-batch-size, --pp-size"
    ]
    assert parse_cmdline("sglang::scheduler_TP0").fields == {}


@pytest.fixture(scope="module")
def sample_out():
    return sample_with_dumps()  # shared: read only


def _readme_config() -> dict[int, list[str]]:
    """sample_logs/README.md's configuration table: main pid -> its cells."""
    text = (SAMPLE / "README.md").read_text().split("### Configuration (`config`", 1)[1].split("###")[0]
    rows = [[c.strip().strip("`") for c in line.strip("|").split("|")] for line in text.splitlines()]
    return {int(r[1]): r for r in rows if len(r) == 11 and r[1].isdigit()}


def test_sample_config_has_both_engines(sample_out):
    """The first processes (started before the data) from their command line; the restarted ones from
    their server_args line (SGLang 0.5.8.post1's fields), which wins, with the command line beside it."""
    want = _readme_config()
    cfg = saved.query(sample_out, "SELECT * FROM config ORDER BY first_ts")
    assert cfg["pid"].to_list() == [2841, 2842, 918234, 918233] and set(want) == set(cfg["pid"])
    for r in cfg.iter_rows(named=True):
        w = want[r["pid"]]
        role = w[0]
        assert (r["role"], r["tp_size"], r["disaggregation_mode"], r["disaggregation_transfer_backend"]) == (
            role,
            int(w[3]),
            w[4],
            w[5],
        )
        assert str(r["disable_overlap_schedule"]) == w[6] == "False"
        assert str(r["enable_hierarchical_cache"]) == w[7] and r["watchdog_timeout"] == float(w[8])
        settings = json.loads(r["settings"])
        assert (
            settings["soft_watchdog_timeout"] == float(w[9])
            and r["disagreements"] is None
            and w[10] == "none"
        )
        assert r["sglang_version"] is None  # no line states it
        if w[2] == "command line only":
            assert r["origin"] == "cmdline" and "disable_overlap_schedule" in r["defaulted"]
        else:
            assert r["origin"] == "server_args+cmdline" and r["defaulted"] is None
            assert len(settings) == 325 and settings["disable_radix_cache"] is (role == "decode")
            assert r["chunked_prefill_size"] == 8192 and r["cmdline"].endswith(
                "--watchdog-timeout 3600"
                + (" --log-requests --log-requests-level 2" if role == "decode" else "")
            )


def test_sample_known_issues_rank_the_race_and_the_overlap_desync_first(sample_out):
    ki = saved.query(sample_out, "known_issues")
    assert ki["family"].to_list() == ["F14", "F1", "F15"]
    assert set(ki["strength"]) == {"signature+config"}
    f14, f1 = ki.row(0, named=True), ki.row(1, named=True)
    assert (
        f14["evidence_rows"] == 3
        and "assert room in self.transfer_infos for room 4384674655194745451" in f14["evidence"]
    )
    assert (
        f1["evidence_rows"] == 4 and "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3" in f1["evidence"]
    )
    assert "--disable-overlap-schedule" in f1["workaround"] and "sglang#26454" in f1["workaround"]
    ev = saved.query(
        sample_out, "SELECT family, config_verdict FROM known_issue_evidence WHERE family = 'F2'"
    )
    assert set(ev["config_verdict"]) == {"against"}  # same stacks, but no DP attention: ruled out


def test_sample_report_recommends_disable_overlap_schedule_for_decode(sample_out):
    from logcorr.render.report import report

    text = report(sample_out)
    section = text.split("## Known upstream issues")[1].split("## Configuration")[0]
    assert "run decode with `--disable-overlap-schedule`" in section and "sglang#26454" in section
    assert "F14: NIXL prefill transfer worker races abort cleanup" in section
    assert "| tp_size | 4 | 4 |" in text


def test_sample_healthy_first_minutes_match_no_family(tmp_path):
    need_journalctl()
    out = tmp_path / "o"
    ingest([SAMPLE / "journal"], out, ReadOptions(until="2025-10-29 21:34:00"))
    assert saved.query(out, "known_issues").height == 0
    assert saved.query(out, "SELECT count(*) AS n FROM config")["n"][0] == 2


def _make_day(out, **kw):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_day", ROOT / "bench" / "make_day.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_day", mod)  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod.make_day(30_000, out, journal=False, json_capture=False, log=lambda s: None, **kw)


@pytest.mark.heavy
def test_synthetic_day_without_its_incident_matches_no_family(tmp_path):
    """Issue 17, no false match: bench/make_day.py's day (30,000 entries: batch lines of 16 ranks,
    access and /health lines, router lines, tracebacks of aborted requests, routine py-spy dumps of an
    idle rank) with --no-incident matches no family; the same day with its incident matches the two
    families it shows (the transfer_infos assertion on NIXL prefill; decode's TP group split under the
    overlap loop), so the test can fail."""
    healthy = _make_day(tmp_path / "healthy", incident=False)
    assert healthy["incident"] == {} and healthy["entries"] == 30_000
    ingest([tmp_path / "healthy" / "day.export"], tmp_path / "h")
    assert saved.query(tmp_path / "h", "known_issue_evidence").height == 0
    assert saved.query(tmp_path / "h", "known_issues").height == 0
    _make_day(tmp_path / "incident")
    ingest([tmp_path / "incident" / "day.export"], tmp_path / "i")
    assert saved.query(tmp_path / "i", "known_issues")["family"].to_list() == ["F14", "F1"]


# Every real case under tests/cases and the encoded families it shows. None shows one: the SGLang
# cases are other families (sglang/20: F4, reduce-scatter hang; sglang/11: F6, #prealloc-req rising;
# sglang/07: a PP prefill hang, F12's kind) or single records of normal operation and errors.
REAL_CASES = {
    "batch3/01_server_args_pd_decode_v058post1_tp16_mooncake.log": [],
    "batch3/02_server_args_rocm_glm5_level_location_prefix.log": [],
    "batch3/03_pyspy_sglang_decode_tp_ranks_pynccl_init_hang.txt": [],
    "batch3/04_nixl_prefill_ucx_remote_disconnect_rooms_multirank.log": [],
    "batch3/05_npu_scheduler_exception_hccl_watchdog_sigquit.log": [],
    "batch3/06_pyspy_native_npu_scheduler_tp0_pyspy_failed_tp1.txt": [],
    "batch3/07_journald_vllm_user_unit_enginecore_traceback_restart.log": [],
    "batch3/08_journald_systemctl_status_vllm_units_stopping_consumed.log": [],
    "batch3/09_smg_service_discovery_removed_prefill_still_selected.log": [],
    "batch3/10_rocm_pd_prefill_bootstrap_vs_decode_transfer_abortreq_diff_rooms.log": [],
    "batch3/11_hicache_mooncake_store_pd_startup_glog.log": [],
    "batch3/12_vllm_ascend_pd_mooncake_glog_year_worker_dp_tp_ep.log": [],
    "batch3/13_vllm_ascend_mooncake_transfer_slice_failed_double_prefix.log": [],
    "batch4/01_kubectl_logs_sgl_router_pod_pd_k8s_discovery_truncated_year.log": [],
    "batch4/02_sgl_router_k8s_discovery_adds_prefill_decode_pods.log": [],
    "batch4/03_cri_stderr_prefill_pod_c10d_timeout_dp_tp_ep_exception_cut.log": [],
    "batch4/04_cri_stdout_mtp_prefill_batches_then_tp2_eagle_exception_cut.log": [],
    "batch4/05_hicache_prefill_launcher_prefix_two_stamps_8h_apart.log": [],
    "batch4/06_prefill_bootstrap_abortreq_dp_ep_vs_router_8h_apart.log": [],
    "batch4/07_prefill_bootstrap_failed_wrapped_records_dp_rank_conflict_grep.log": [],
    "batch4/08_decode_dp_attention_mtp_accept_len_transfer_req_nccl_assert.log": [],
    "batch4/09_faulthandler_mooncake_threads_then_record_glued_to_extension_modules.log": [],
    "batch4/10_prefill_dp_attention_old_batch_format_unbootstrapped_mooncake_metrics.log": [],
    "batch4/11_custom_log_format_pid_dp_tp_ep_bracket_init_failure.log": [],
    "batch4/12_nccl_info_pd_prefill_pod_hostname_wrapped_commid_no_timestamps.log": [],
    "batch4/13_log_requests_receive_no_prefix_health_checks_access_without_info.log": [],
    "batch4/14_pyspy_dump_dp1_tp3_eagle_draft_after_dp3_tp7_watchdog_batch.txt": [],
    "batch4/15_decode_orphan_typeerror_tail_then_dp_tp_ep_exception_cut.log": [],
    "batch5/01_pyspy_dp_controller_soft_watchdog_after_decode_batches_node_rank1.txt": [],
    "batch5/02_kubectl_logs_previous_kthena_vllm_prefill_pod_traceback_tail.log": [],
    "batch5/03_ascend_memfabric_smem_init_failure_then_sglang_transfer_engine_failed.log": [],
    "batch5/04_vllm_router_rs_pd_router_k8s_headless_workers_startup_two_space_info.log": [],
    "batch5/05_kubectl_logs_vllm_prefill_pod_lmcache_comma_millis_access_no_time.log": [],
    "batch5/06_nccl_info_statefulset_pod_host_interleaved_watchdog_failure_detected_seq.log": [],
    "batch5/07_nccl_watchdog_terminal_wrapped_padded_allgather_timeout_two_ranks.log": [],
    "batch5/08_dynamo_run_sglang_rust_utc_z_vs_python_local_time_5h30.log": [],
    "batch5/09_pd_decode_startup_stuck_init_torch_distributed_tp_ep_nccl_info_host.log": [],
    "batch5/10_prometheus_scrape_sglang_pd_metrics_dp_tp_pp_labels_no_time.log": [],
    "batch5/11_python_logging_wrapper_reemits_sglang_traceback_sigquit_child.log": [],
    "batch5/12_vllm_ascend_decode_pod_glog_connect_target_failed_worker_dp_tp_request_ids.log": [],
    "batch5/13_dynamo_sglang_pd_decode_utc_z_vs_local_ms_dp_tp_ep_illegal_memory.log": [],
    "batch5/14_mooncake_ep_segfault_backward_style_frames_after_launch_command_dp_ep16.log": [],
    "batch5/15_faulthandler_threads_interleaved_segfault_glog_glued_pd_decode_mooncake_tcp.log": [],
    "batch5/16_vllm_router_pd_debug_spans_quoted_request_id_emoji_prefill_response_json_tail.log": [],
    "batch5/17_dynamo_serve_cli_iso_plus0000_brackets_mixed_vllm_no_year_duplicates.log": [],
    "batch6/01_unindented_traceback_markdown_ate_dunder_tp2_init_after_two_identical_sigquit.log": [],
    "batch6/02_pd_prefill_tp5_scheduler_exception_overlap_disagg_prefill_traceback_cut_no_fence.log": [],
    "batch6/03_prefill_dp0_tp0_ep0_tpmodelworkerclient_exception_prose_label_traceback_cut.log": [],
    "batch6/04_inline_backtick_child_exit_131_then_decode_dp10_tp21_scheduler_exception.log": [],
    "batch6/05_inline_backtick_gpu_coredump_then_decode_dp1_tp4_overlap_exception_synchronize.log": [],
    "batch6/06_curl_abort_json_decode_transfer_failed_glued_to_shell_prompt_tail_prefiller_log.log": [],
    "batch6/07_faulthandler_segfault_blank_lines_between_frames_two_threads_bash_fence.log": [],
    "batch6/08_nccl_watchdog_allreduce_rank4_interleaved_nccl_info_midline_fragment.log": [],
    "batch6/09_watchdog_timeout_tp0_to_tp7_sigquit_killed_then_top_snapshot.log": [],
    "batch6/10_c10d_waitforinput_ipv4_mapped_ipv6_timeout_then_tp5_scheduler_init_exception.log": [],
    "batch6/11_ray_actor_prefix_sglangengine_pid_ip_tp0_scheduler_exception_carets.log": [],
    "batch6/12_faulthandler_fatal_python_error_aborted_after_cpp_frame_watchdog_thread.log": [],
    "batch6/13_vllm_v0_style_no_process_prefix_enginecore_fatal_error_dump_input.log": [],
    "batch6/14_vllm_nixl_mooncake_enginecore_n_debug_vllmworker_tp0_workerproc_exception.log": [],
    "batch6/15_llm_d_pod_prefixed_vllm_prefill_pods_enginecore_dp0_torch_rank0_warning.log": [],
    "batch6/16_lmcache_comma_ms_ucx_epoch_timestamp_error_glog_warning_same_second.log": [],
    "batch6/17_sgl_router_grpc_workers_unreachable_error_debug_health_check.log": [],
    "batch6/18_old_router_rust_bracket_dash_format_interleaved_torch_autotune.log": [],
    "batch6/19_cpp_terminate_what_pg_watchdog_cuda_illegal_memory_access_frames.log": [],
    "batch6/20_prefill_node_label_batches_and_apache_style_access_plus0000_k8s_1p1d.log": [],
    "batch7/01_cpp_frames_terminate_what_pg3_rank5_allgather_base_seqnum9141_timeout.log": [],
    "batch7/02_time_only_no_date_tqdm_processing_batches_prefill_batches_tp0.log": [],
    "batch7/03_decode_batch_then_decode_oom_retract_tp0_5_7_2_6_not_pd.log": [],
    "batch7/04_headless_starlette_traceback_tokenizer_manager_wait_one_response_cut.log": [],
    "batch7/05_exception_group_pipe_prefixed_httpexception_prefill_bootstrap_failed_then_chained_traceback.log": [],
    "batch7/06_ten_identical_received_output_state_deleted_tokenizer_manager_ellipsis.log": [],
    "batch7/07_cuda_container_banner_pager_truncated_server_args_tp_init_lines.log": [],
    "batch7/08_bench_serving_client_shell_prompt_namespace_hash_lines_traceback_cut.log": [],
    "batch7/09_empty_time_tp_tags_glog_mooncake_store_transfer_timeout_then_tp2_init_exception.log": [],
    "batch7/10_chinese_prose_transfer_engine_bench_command_glog_handshake_qp_rtr_timeout.log": [],
    "batch7/11_terminal_wrapped_ucx_epoch_local_protection_error_dynamo_nixl_err_backend.log": [],
    "batch7/12_headless_traceback_nixl_not_found_free_invalid_pointer_dynamo_rust_warn_error.log": [],
    "batch7/13_indented_vllm_v0_lines_tqdm_glued_init_engine_record.log": [],
    "batch7/14_markdown_heading_glog_e0730_enginecore_nixl_transfer_exception_decode.log": [],
    "batch7/15_vllm_worker_tp0_ep0_nixl_handshake_setup_failed_traceback_decode.log": [],
    "batch7/16_kubectl_timestamps_enginecore_dp_tqdm_no_prefix_klog_sidecar_shutting_down.log": [],
    "batch7/17_chinese_prose_glued_to_enginecore_dp0_waiting_for_remote_kvs_debug.log": [],
    "batch7/18_what_nccl_remote_error_multiline_rank1_checkfornccl_errors_frames.log": [],
    "batch7/19_interleaved_terminate_lines_terminal_wrapped_what_rank3_broadcast_timeout.log": [],
    "batch7/20_vllm_v0_nixl_unknown_error_before_traceback_dequeued_prefill_request.log": [],
    "batch8/01_tp0_prefill_batches_queue_130_to_124_no_failure_in_excerpt.log": [],
    "batch8/02_decode_batch_full_token_usage_1_00_first_line_missing_open_bracket.log": [],
    "batch8/03_docker_compose_prefixed_headless_traceback_init_memory_pool_oom_line_cut.log": [],
    "batch8/04_mooncake_transfer_engine_glog_startup_three_threads_logging_before_initgooglelogging.log": [],
    "batch8/05_glog_ellipsis_then_attn_cp7_tp7_ep7_prefill_transfer_failed_non_hex_rid_decode_dead.log": [],
    "batch8/06_mooncake_store_glog_errors_with_glibc_malloc_unaligned_tcache_abort_line.log": [],
    "batch8/07_pipe_prefixed_vllm_v0_worker_died_then_rank0_allreduce_watchdog_timeout.log": [],
    "batch8/08_vllm_v0_stats_then_ray_worker_ansi_remnant_rank4_allreduce_watchdog_timeout.log": [],
    "batch8/09_space_padded_added_request_lines_then_enginecore_fatal_error_traceback_header.log": [],
    "batch8/10_apiserver_pid1_traceback_tail_enginedeaderror_then_http_500_and_shutting_down.log": [],
    "batch8/11_py313_tilde_caret_markers_ellipsis_lines_apiserver_engine_core_initialization_failed.log": [],
    "batch8/12_dynamo_z_stamped_sighup_sigterm_four_children_exitcode_15_then_headless_serve_traceback.log": [],
    "batch8/13_dynamo_ansi_remnants_broken_pipe_caused_by_blocks_added_then_aborted_request.log": [],
    "batch8/14_pyspy_dump_vllm_enginecore_mainthread_idle_in_shm_broadcast_dequeue_hang.log": [],
    "batch8/15_llmd_decode_waiting_for_remote_kvs_ellipsis_then_kubectl_exec_session_flattened.log": [],
    "batch8/16_enginecore_dp0_nixl_connector_init_with_nixl_own_dated_lines_no_failure.log": [],
    "batch8/17_decode_bootstrap_connection_refused_then_scheduler_exception_disagg_decode_loop_cut.log": [],
    "batch8/18_backtick_glued_sgl_router_startup_regular_mode_empty_worker_urls_debug_job_queue.log": [],
    "batch8/19_tool_call_markup_inside_reasoning_content_of_printed_chat_completion_dict.log": [],
    "batch9/01_nccl_info_channel_lines_interleaved_with_rank7_allreduce_watchdog_timeout_no_time.log": [],
    "batch9/02_tp0_tp1_startup_to_cuda_graph_end_with_tqdm_bar_glued_to_a_record_no_failure.log": [],
    "batch9/03_faulthandler_segfault_current_thread_in_torch_all_reduce_watchdog_thread_first_cut.log": [],
    "batch9/04_fence_then_tail_of_previous_dump_then_segfault_in_pynccl_ncclcomminitrank_at_init.log": [],
    "batch9/05_fence_then_interleaved_scrambled_scheduler_frames_of_several_processes_no_header.log": [],
    "batch9/06_double_spaced_shard_progress_then_python_logging_flashinfer_jit_line_capture_0_of_17.log": [],
    "batch9/07_prose_error_words_then_torch_userwarning_cuda_capability_12_1_indented_no_failure.log": [],
    "batch9/08_vllmworker_rank_pid_debug_nixl_start_load_kv_handshake_trailing_space_no_failure.log": [],
    "batch9/09_enginecore_0_lmcache_dated_ms_lines_then_vllm_enginecore_failed_to_start_traceback_cut.log": [],
    "batch9/10_prose_waiting_for_remote_kvs_then_worker_dp_ep_mooncake_pull_timeout_waiting_for_p_side.log": [],
    "batch9/11_chinese_prose_then_apiserver_pid1_specdecoding_and_engine_stats_access_200_no_failure.log": [],
    "batch9/12_hermes_tool_parser_debug_stream_tool_call_token_started_header_only_continuation_lines.log": [],
    "batch9/13_apiserver_markdown_autolinked_file_tags_stats_and_single_space_access_lines_no_failure.log": [],
    "batch9/14_nested_enginecore_0_and_vllmworker_tp_prefixes_empty_message_line_torch_dynamo_no_failure.log": [],
    "batch9/15_dynamo_prefill_worker_backtick_shell_prompt_then_z_stamped_startup_master_pid_no_error.log": [],
    "batch9/16_nixl_mooncake_backend_test_prompt_then_glog_with_full_date_transfer_engine_8_hcas_no_failure.log": [],
    "batch9/17_gtest_run_under_gdb_glog_nixl_ucx_plugin_load_ucx_epoch_line_new_thread_lines_no_failure.log": [],
    "batch9/18_mooncake_store_glog_retries_put_transfer_fail_then_markdown_heading_decode_vllm_rank0_warning.log": [],
    "batch10/01_prose_then_vllm_worker_dp0_ep0_nixl_engine_id_mismatch_wrapped_inside_uuid_handshake_failed.log": [],
    "batch10/02_deepspeed_prose_backtick_command_then_old_format_e_processgroupnccl_broadcast_watchdog_4_ranks.log": [],
    "batch10/03_tp12_scheduler_exception_elided_frames_gloo_read_error_then_five_ranks_one_line_runtimeerror.log": [],
    "batch10/04_fence_then_cxx_frames_17_27_of_scheduler_tp1_then_fatal_python_error_aborted_heartbeat_thread.log": [],
    "batch10/05_tp3_scheduler_exception_in_init_load_model_traceback_cut_before_keyerror.log": [],
    "batch10/06_review_prose_urls_img_tag_then_header_missing_first_digit_dp0_tp0_ep0_init_traceback_cut.log": [],
    "batch10/07_dynamo_prose_then_traceback_tail_terminal_cut_function_name_nixl_is_not_available.log": [],
    "batch10/08_llm_d_routing_sidecar_go_log_proxy_error_then_klog_e0709_waiting_for_vllm_connection_refused.log": [],
    "batch10/09_log_viewer_line_number_prefix_then_c10d_rank0_rank4_allreduce_watchdog_and_pg1_work_lines.log": [],
    "batch10/10_mooncake_glog_8_digit_date_tcp_transport_writebody_bad_address_wrap_turned_into_spaces.log": [],
    "batch10/11_prefill_decode_launch_commands_in_fences_then_prefill_warmup_ready_batch_error_cut_no_failure.log": [],
    "batch10/12_prose_markdown_heading_prefill_terminal_then_glog_writebody_bad_address_and_sglang_session_failed.log": [],
    "batch10/13_pr_description_before_after_hash_comment_lines_then_vllm_nixl_transfer_and_handshake_failures.log": [],
    "batch10/14_prose_then_dp4_tp0_prefill_batch_and_access_lines_padded_with_trailing_spaces_keyerror_not_in_text.log": [],
    "batch10/15_chinese_ai_summary_with_counts_then_indented_shell_fence_hccl_plog_error_aicpu_launch_failed.log": [],
    "batch10/16_benchmark_client_command_tqdm_bar_then_python313_caret_traceback_keyerror_answer_no_server_record.log": [],
    "batch11/01_hicache_mooncake_store_setup_tp_lines_glog_connection_refused_then_tp6_scheduler_exception_cut.log": [],
    "batch11/02_prose_prefill_node_fullwidth_colon_glog_asio_cannot_assign_address_then_tp0_prefill_transfer_failed_abortreq.log": [],
    "batch11/03_four_node_tp24_31_load_weight_begin_end_cache_shape_lines_no_failure_watchdog_only_in_title.log": [],
    "batch11/04_c10d_reduce_scatter_base_watchdog_ranks_0_4_3_each_with_pg1_work_line.log": [],
    "batch11/05_shell_fence_mooncake_store_client_transfer_failed_task_retrying_attempts_asio_connection_refused.log": [],
    "batch11/06_tp8_15_decode_out_of_memory_happened_retracted_reqs_new_token_ratio_no_crash.log": [],
    "batch11/07_prose_the_other_log_tp0_lora_scheduler_exception_cuda_illegal_memory_in_synchronize_with_hints.log": [],
    "batch11/08_python_logging_comma_ms_flashinfer_jit_lines_then_tp0_tpmodelworkerclient_exception_cut.log": [],
    "batch11/09_aibrix_prose_sentence_quoting_vllm_prefill_nixl_potentially_invalid_kv_blocks_then_benchmark_script.log": [],
    "batch11/10_vllm_enginecore_0_raywrapper_nested_prefix_error_traceback_tail_nixl_register_kv_caches_cut.log": [],
    "batch11/11_vllm_v0_style_ucx_caught_signal_11_host_pid_tid_lines_then_enginecore_failed_to_start_cut.log": [],
    "batch11/12_ci_fail_test_ucx_epoch_float_stamps_host_pid_then_glog_nixl_createbackend_ucx_err_backend.log": [],
    "batch11/13_sglang_bootstrap_route_access_line_then_ucx_segfault_backtrace_tid_frames_libucs_libucp.log": [],
    "batch11/14_chinese_prose_decode_error_then_sglang_startup_uvicorn_prefill_warmup_fakekvsender_prefill_batch.log": [],
    "batch11/15_vllm_multiproc_executor_error_prefixed_traceback_middle_lmcache_pd_backend_transfer_channel_carets.log": [],
    "batch11/16_prose_backtick_inline_multiline_runtimeerror_decode_out_of_memory_then_backtick_launch_command.log": [],
    "batch12/01_prose_then_header_cut_before_time_dp3_tp3_ep3_disagg_decode_scheduler_exception_cut.log": [],
    "batch12/02_fence_c10d_allreduce_watchdog_ranks_1_0_2_pg_id_guid_default_pg_work_lines.log": [],
    "batch12/03_vllm_v0_engine_error_lines_wrapping_ascend_err02200_hccl_eh9999_cann_traceback_then_python_traceback_cut.log": [],
    "batch12/04_prose_then_one_line_of_glued_vllmworker_records_no_newlines_workerproc_exception_execute_model_cut.log": [],
    "batch12/05_python_fence_enginecore_dp0_exception_workerproc_init_failed_then_apiserver_traceback_no_time_no_level.log": [],
    "batch12/06_indented_z_stamped_dynamo_run_subprocess_debug_lines_carrying_vllm_engine_traceback_middle_cut.log": [],
    "batch12/07_prose_fullwidth_paren_then_enginecore_dp0_fatal_error_busy_loop_traceback_cut.log": [],
    "batch12/08_french_locale_syslog_dec_month_bash_pid_host_enginecore_dp0_traceback_middle_busy_loop.log": [],
    "batch12/09_chunk_starts_mid_line_lmcache_info_storing_kv_ranks_1_0_3_then_workerproc_exception_ranks_2_3_interleaved_cut.log": [],
    "batch12/10_prose_then_lmcache_trailing_stamp_lines_and_vllm_worker_pid_320_died_exit_code_minus_9.log": [],
    "batch12/11_time_only_tp0_decode_batches_running_2_then_1_no_failure_title_says_stops_responding.log": [],
    "batch12/12_comma_form_decode_and_prefill_batches_cuda_graph_true_access_lines_no_rank_no_failure.log": [],
    "batch12/13_prose_backtick_call_log_browser_agent_line_then_tp3_scheduler_exception_in_synchronize_cut.log": [],
    "batch12/14_received_sigquit_from_child_then_tp3_scheduler_init_exception_in_init_model_runner_cut.log": [],
    "batch12/15_z_stamped_dynamo_serve_graph_gpu_allocation_arbiter_watchers_started_trailing_spaces_warn_no_failure.log": [],
    "batch13/01_c10d_watchdog_cpp_frames_tail_then_v0_worker_pid_198_died_exit_minus_6_heartbeat_monitor_timed_out_pg2_rank0.log": [],
    "batch13/02_c10d_broadcast_watchdog_rank0_seqnum_5730_rank3_seqnum_5729_pg_id4_guid67_failure_detected_sequence_id_lines.log": [],
    "batch13/03_c10d_heartbeat_watchdog_stuck_480s_rank6_lines_hard_wrapped_at_116_columns_trailing_spaces_fatal_f_line.log": [],
    "batch13/04_abseil_sigsegv_received_raylet_logging_cc_lines_then_fatal_python_segfault_stack_in_cuda_graph_capture.log": [],
    "batch13/05_traceback_middle_with_indentation_lost_init_torch_distributed_ncclcomminitrank_runtimeerror_nccl_unhandled_system_error.log": [],
    "batch13/06_ascend_tp0_decode_and_prefill_batch_lines_with_their_middles_cut_out_access_lines_without_status_no_failure.log": [],
    "batch13/07_prose_question_then_six_chat_completion_access_lines_200_no_batch_lines_no_failure.log": [],
    "batch13/08_k9s_box_drawn_frontend_lines_z_stamped_dynamo_kv_router_selected_worker_formula_padded_no_failure.log": [],
    "batch13/09_v0_mqllmengine_error_lines_outofmemoryerror_repr_then_traceback_start_run_engine_loop_cut.log": [],
    "batch13/10_bash_fence_headless_traceback_overlap_thread_forward_thread_func_set_stream_runtimeerror_cuda_error_out_of_memory.log": [],
    "batch13/11_text_fence_api_server_error_lines_enginedeaderror_then_stream_generator_traceback_cut_title_says_pd_decode_restarts.log": [],
    "batch13/12_rollout_manager_lines_glued_without_newlines_503_no_available_workers_all_circuits_open_retrying.log": [],
    "batch13/13_nested_enginecore_dp0_raywrapper_prefixes_cuda_graph_capture_progress_then_process_traceback_no_time_no_level_cut.log": [],
    "batch13/14_fence_vllm_platform_line_then_server_args_line_wrapped_mid_word_log_level_ht_tp_no_failure_title_says_oom.log": [],
    "batch13/15_shell_fence_kvbm_rust_z_lines_utc_interleaved_with_enginecore_dp0_local_time_lines_8h_apart_no_failure.log": [],
    "batch14/01_chinese_prose_then_decode_dp6_tp6_ep6_kvtransfererror_timed_out_600s_waitingforinput_two_rooms_dp0_warning.log": [
        "F13"
    ],  # decode timed out after 600 s in KVPoll.WaitingForInput
    "batch14/02_prose_says_no_error_then_tp0_prefill_transfer_failed_abortreq_then_usage_commands_prefill_decode_router.log": [],
    "batch14/03_vllm_ascend_apiserver_access_glog_sync_batch_transfer_timeout_then_nested_worker_dp0_tp_ep_mooncake_transfer_failed.log": [],
    "batch14/04_enginecore_dp0_debug_lines_request_still_waiting_for_remote_kvs_zero_kv_receives_no_error_line.log": [],
    "batch14/05_markdown_prose_naming_watchdog_then_headless_pyspy_mainthread_active_in_cumoduleloaddata_triton_jit_cut.log": [],
    "batch14/06_tp5_scheduler_init_exception_in_init_torch_distributed_groupcoordinator_traceback_cut_title_names_nccl_socket.log": [],
    "batch14/07_four_tp_nccl_version_lines_then_tp2_scheduler_init_exception_overlap_thread_worker_cut_after_three_frames.log": [],
    "batch14/08_backtick_journalctl_command_then_systemd_unit_crash_loop_status_1_failure_restart_counter_7_then_nrestarts_58.log": [],
    "batch14/09_sh_fence_chinese_locale_journal_month_2yue_bootkube_connection_refused_retries_and_glog_e_line.log": [],
    "batch14/10_docker_container_id_nccl_info_init_complete_ranks_13_9_15_tuner_plugin_failed_to_find_info_no_failure_title_says_stuck.log": [],
    "batch14/11_docker_container_id_nccl_info_channel_ring_tree_lines_two_pids_no_failure_title_says_address_in_use.log": [],
    "batch14/12_prose_then_docker_compose_t_service_prefix_rfc3339_nano_z_kafka_startup_lines_no_failure_title_says_update_fails.log": [],
    "batch14/13_rollout_manager_pid_1191_http_503_no_available_workers_all_circuits_open_retrying_attempts_51_and_19.log": [],
    "batch14/14_markdown_headings_nixl_xpu_prefill_command_then_startup_lines_ignore_import_error_no_module_vllm_no_failure_title_says_not_working.log": [],
    "batch14/15_prose_only_tool_call_markup_left_in_content_empty_tool_calls_launch_and_curl_commands_no_log_record.log": [],
    "batch15/01_deepgemm_warmup_progress_bar_glued_before_tp1_ep1_scheduler_exception_event_loop_overlap_cut.log": [],
    "batch15/02_prose_then_markdown_blockquoted_tp6_scheduler_exception_get_next_batch_to_run_cut.log": [],
    "batch15/03_prose_text_fence_tp0_scheduler_exception_traceback_head_only_xgrammar.log": [],
    "batch15/04_nccl_net_ib_warn_completion_error_status_12_vendor_err_129_three_groups_no_time.log": [],
    "batch15/05_deepep_dispatch_forwarder_and_nvl_receiver_timeouts_no_header_no_time.log": [],
    "batch15/06_fence_five_tp0_decode_batches_comma_form_trailing_comma_no_failure_title_says_alloc_fail.log": [],
    "batch15/07_prose_faulthandler_thread_dump_glued_received_sigquit_and_extension_modules_glued_tp3_scheduler_exception_cut.log": [],
    "batch15/08_debug_prints_hash_comment_lines_decode_out_of_memory_retracted_one_request_no_crash.log": [],
    "batch15/09_bash_fence_headless_traceback_middle_tbo_deepep_dispatch_b_cut_both_ends.log": [],
    "batch15/10_prose_illegal_memory_access_then_access_line_and_rankless_scheduler_exception_cut.log": [],
    "batch16/01_prose_inline_backtick_opens_tp0_pd_decode_batch_then_scheduler_exception_dispatch_event_loop_cut.log": [],
    "batch16/02_prose_fence_access_lines_then_rankless_scheduler_exception_event_loop_overlap_disagg_decode_nixl_cut.log": [],
    "batch16/03_markdown_headings_prose_then_dynamo_rust_tracing_utc_and_nixl_local_time_decode_startup_no_failure_title_says_bootstrap_never_started.log": [],
    "batch16/04_prose_bash_fence_tp0_tp1_startup_with_yearless_vllm_custom_all_reduce_lines_no_failure_title_says_router_failure.log": [],
    "batch16/05_pr_motivation_bold_context_ci_url_then_one_rankless_tool_call_parse_streaming_increment_json_error_line.log": [],
    "batch16/06_fence_access_lines_then_rankless_current_batch_debug_dump_and_npu_scheduler_pyspy_dump_replay_no_watchdog_line.log": [],
    "batch16/07_multimodal_gen_month_day_header_rank0_scheduler_dead_exit_code_minus9_then_cli_generate_traceback_cut.log": [],
    "batch16/08_ci_comment_bold_prose_segfault_banner_unknown_native_frames_mooncake_then_subprocess_scheduler_0_crashed_exit_code_minus11.log": [],
    "batch16/09_prose_fence_docker_json_file_lines_router_rust_debug_connections_only_no_failure_title_says_router_crashes.log": [],
    "batch16/10_bold_prose_inline_backtick_current_running_queue_then_router_rust_warn_generate_failed_attempts_removing_failed_worker.log": [],
    "batch16/11_fence_tp2_scheduler_exception_event_loop_normal_prepare_for_extend_triton_jit_lambda_redacted_relative_paths_cut.log": [],
    "batch16/12_received_sigquit_before_tp2_scheduler_exception_startup_init_model_worker_load_model_cut_title_says_cuda_oom.log": [],
    "batch16/13_prose_fence_old_exception_in_controllersingle_no_time_no_rank_traceback_decode_sample_flashinfer_cut_title_says_cuda_oom.log": [],
    "batch17/01_chunk_starts_mid_line_vllm_scheduler_output_dump_brackets_escaped_enginecore_dp0_fatal_error_cut.log": [],
    "batch17/02_torchrun_childfailederror_four_sigabrt_failures_ranks_1_3_5_7_root_cause_cut.log": [],
    "batch17/03_shell_fence_torchrun_childfailederror_root_cause_rank10_sigabrt_then_srun_error_and_elastic_sigterm_glog_lines.log": [],
    "batch17/04_ray_actor_prefix_envworker_gloo_connectfullmesh_cpp_frames_only_no_message.log": [],
    "batch17/05_mooncake_transfer_engine_bench_command_then_glog_handshake_modify_qp_rtr_connection_timed_out.log": [],
    "batch17/06_openmpi_backtrace_two_pids_interleaved_mpi_bcast_leader_recv_thread_no_signal_line.log": [],
    "batch17/07_tensorrt_llm_info_startup_four_mpi_ranks_no_failure_title_says_hang.log": [],
    "batch17/08_prose_then_k9s_box_border_dynamo_json_info_access_lines_no_failure_title_says_etcd_lease_lost.log": [],
    "batch17/09_chinese_prose_bash_fence_command_then_sglang_warmup_initialization_failed_assertion_403_forbidden_prose_asks_oom.log": [],
    "batch17/10_k9s_box_border_tp7_scheduler_exception_traceback_head_two_frames_cut.log": [],
    "batch17/11_three_dynamo_tracebacks_interleaved_frames_duplicated_etcd_connect_exception_no_time.log": [],
    "batch17/12_triple_nested_vllm_prefixes_worker_tp0_kv_connector_lmcache_import_traceback_middle_cut.log": [],
    "batch17/13_markdown_heading_then_rust_anyhow_error_caused_by_chain_etcd_connection_refused_no_time.log": [],
    "batch17/14_py_fence_gloo_connectfullmesh_connect_timeout_runtimeerror_then_c10d_glog_e_line_and_spawnprocess_traceback_cut.log": [],
    "batch18/01_review_thread_diff_hunk_then_dp7_tp7_ep7_scheduler_exception_dispatch_event_loop_overlap_run_batch_cut.log": [],
    "batch18/02_prose_pd_decode_fence_cuda_graph_capture_progress_bar_then_dp2_tp2_ep2_scheduler_exception_capture_cut.log": [],
    "batch18/03_fence_dp_attention_startup_pager_scroll_marker_access_line_prefill_batches_no_failure_title_says_cannot_run.log": [],
    "batch18/04_prose_fence_old_model_rpc_userwarning_kv_cache_pool_leak_then_exception_in_modelrpcclient_forward_cut.log": [],
    "batch18/05_prose_inline_pd_prefill_command_fence_traceback_tail_without_header_nextn_forward_cut.log": [],
    "batch18/06_chinese_prose_command_then_tp0_access_lines_prefill_batch_no_failure_title_says_killed.log": [],
    "batch18/07_attachment_path_glued_before_tp0_ep0_decode_batch_swa_token_prefill_batches_no_failure_title_says_error.log": [],
    "batch18/08_thread_comments_log_level_debug_fence_then_register_kv_tensors_and_launch_server_uvicorn_traceback_cut.log": [],
    "batch18/09_bench_commands_error_logs_bash_fence_traceback_tail_event_loop_normal_eagle_verify_alloc_cut_title_says_oom.log": [],
    "batch18/10_prose_inline_backtick_dp1_tp5_scheduler_exception_cuda_graph_capture_one_batch_size_cut.log": [],
    "batch18/11_prose_fence_frontend_interpreter_userwarning_stream_executor_traceback_cut_title_says_connection_reset.log": [],
    "batch18/12_motivation_bash_fence_shell_prompt_router_python_error_starting_router_worker_urls_none_then_comments.log": [],
    "batch18/13_prose_client_script_400_failed_to_parse_fc_json_then_client_unboundlocal_no_time_then_env_list.log": [],
    "batch19/01_prose_quotes_watchdog_then_indented_c10d_watchdog_lines_rank7_broadcast_rank3_allreduce_seqnum_80078.log": [],
    "batch19/02_prose_bold_then_old_c10d_watchdog_lines_no_time_five_ranks_allreduce_seqnum_469508_timeout_1800000.log": [],
    "batch19/03_journalctl_k_grep_command_then_short_boot_lines_with_host_no_failure_title_says_gpu_fallen_off_bus.log": [],
    "batch19/04_markdown_heading_prose_then_dmesg_nvrm_gpu_fallen_off_bus_continuation_lines_no_xid_probe_failed.log": [],
    "batch19/05_kubectl_logs_padded_to_terminal_width_enginecore_dp0_failed_to_start_frame_wrapped_mid_word_traceback_cut.log": [],
    "batch19/06_docker_compose_prefix_vllm_apiserver_enginedeaderror_tail_then_cuda_warning_rank0_terminate_acceleratorerror_illegal_memory_access.log": [],
    "batch19/07_journalctl_short_host_vllm_unit_pid_8707_apiserver_traceback_middle_make_async_mp_client_cut_both_ends.log": [],
    "batch19/08_dmesg_oom_kill_terminal_wrapped_lines_killed_process_25315_python3_oom_reaper.log": [],
    "batch19/09_deepspeed_launcher_sigkill_handler_killing_subprocess_13266_then_error_exits_with_return_code_minus9.log": [],
    "batch19/10_pyspy_dump_fragment_starts_mid_thread_vllm_engine_five_idle_threads_no_process_header_title_says_retrieve_hang.log": [],
    "batch19/11_prose_then_tritonserver_signal_11_received_fifteen_native_frames_tritonbackend_responsesend_no_time.log": [],
    "batch19/12_cloudwatch_offset_stamp_then_tgi_escaped_ansi_033_utc_lines_waiting_for_shard_rank0_no_failure_title_says_panicked.log": [],
    "batch19/13_c10d_frames_tail_exception_raised_from_ncclcommwatchdog_then_tgi_launcher_shard_0_signal_6_crashed_terminating_webserver.log": [],
    "batch19/14_tgi_json_lines_webserver_crashed_error_then_bare_error_webserverfailed_and_shard_manager_rank0_terminated.log": [],
    "batch19/15_prose_then_old_vllm_info_lines_workers_ready_awaiting_tasks_no_failure_title_says_stuck_at_pynccl.log": [],
    "batch20/01_checklist_prose_fence_kimi_hicache_tp4_ep4_scheduler_exception_dispatch_event_loop_overlap_cut.log": [],
    "batch20/02_fence_caret_then_assertionerror_parent_child_key_then_tp1_scheduler_exception_escaped_quotes_unindented_frames_cut.log": [],
    "batch20/03_markdown_title_summary_then_tp5_ep5_scheduler_exception_without_time_pop_and_process_cut_title_says_assertionerror.log": [],
    "batch20/04_review_comment_prose_inline_backtick_scheduler_exception_no_rank_eagle_merge_batch_torch_cat_cut.log": [],
    "batch20/05_comment_fence_caret_tail_nameerror_build_tree_kernel_then_sigquit_child_then_tp3_scheduler_exception_run_batch_cut.log": [],
    "batch20/06_checklist_indented_prose_and_fence_memory_snapshot_full_swa_then_tp0_watchdog_timeout_without_time_hicache_eagle.log": [],
    "batch20/07_prose_bold_then_tp0_prefill_batches_running_58_59_no_failure_title_says_benchmark_error.log": [],
    "batch20/08_fence_receive_generatereqinput_debug_line_without_rank_no_failure_title_says_requests_hang.log": [],
    "batch20/09_prose_fence_pd_prefill_warmup_200_fired_up_ready_to_roll_no_failure_title_says_nixlkvsender_typeerror.log": [],
    "batch20/10_describe_bug_unfenced_dp0_tp0_scheduler_exception_event_loop_overlap_disagg_prefill_nixl_cut.log": [],
    "batch20/11_pr_motivation_fence_response_json_reasoning_content_with_leaked_tool_call_markup_tool_calls_null_no_log.log": [],
    "batch20/12_fence_pyspy_dump_fragment_from_mid_thread_no_header_forward_thread_ncclcommwindowregister_title_glm_gb200.log": [],
    "batch20/13_prose_bash_launch_command_then_traceback_middle_add_one_req_unified_radix_init_load_back_cut_gemma4.log": [],
    "batch21/01_prose_then_docker_logs_t_rfc3339nano_old_c10d_watchdog_rank0_allreduce_seqnum1_timeout_60000_terminate_what_cut.log": [],
    "batch21/02_ray_serve_replica_prefix_enginedeaderror_then_ray_serve_logger_error_request_failure_frames_without_traceback_header.log": [],
    "batch21/03_ray_pid_ip_prefix_repeated_across_cluster_then_servecontroller_error_replica_will_be_stopped_traceback_cut.log": [],
    "batch21/04_mpirun_command_gtest_teardown_then_bare_c10_heartbeat_watchdog_got_stuck_for_10_seconds_rank3_empty_pg_guid.log": [],
    "batch21/05_nccl_host_pid_tid_warn_proxy_service_failed_setup_from_rank3_then_cuda_failure_driver_shutting_down_blank_lines_between.log": [],
    "batch21/06_torch_rank4_c10d_lines_taking_process_down_then_watchdog_thread_terminated_allgather_seqnum1_numel_1_16_frames_cut.log": [],
    "batch21/07_nccl_tests_command_hash_comment_lines_then_nccl_info_two_hosts_plugin_not_found_no_failure_title_says_hang.log": [],
    "batch21/08_log_ui_paste_newest_first_tab_lines_between_vllm_apiserver_pid1_traceback_reversed_make_async_mp_client_cut.log": [],
    "batch21/09_block_quoted_ci_stamp_7_digit_fraction_then_klog_i0902_inference_server_lines_two_clocks_no_failure_title_says_gross_error.log": [],
    "batch21/10_lmdeploy_python_logging_comma_ms_then_turbomind_tm_info_and_uvicorn_access_no_failure_title_says_stalls_crashes.log": [],
    "batch21/11_ray_worker_wrapper_prefix_native_backtrace_ncclcommwatchdog_blank_prefixed_lines_then_raylet_worker_died_line_cut.log": [],
    "batch21/12_torch_elastic_childfailederror_root_cause_block_time_underscore_host_rank1_exitcode_minus6_signal6_sigabrt.log": [],
    "batch21/13_c10_frames_tail_then_torch_elastic_glog_sigterm_three_workers_failed_exitcode_minus6_local_rank3_then_accelerate_traceback_cut.log": [],
    "batch21/14_stern_pod_container_prefix_decode_pod_routing_proxy_klog_connection_refused_and_vllm_apiserver_shutdown_no_crash_in_text.log": [],
    "batch22/01_summary_prose_fence_two_gloo_runtimeerror_timed_out_7200000ms_then_unindented_frames_disagg_decode_dp_attn_mlp_sync_cut.log": [],
    "batch22/02_fence_dp_tp_tp_all_gather_debug_lines_nccl_version_then_dp0_tp1_scheduler_exception_event_loop_normal_disagg_decode_run_batch_cut.log": [],
    "batch22/03_fence_three_get_health_generate_200_then_prose_scheduler_has_crashed_liveness_yaml_no_failure_title_says_false_positive.log": [],
    "batch22/04_prose_pd_glm_kibana_export_two_clocks_may_16_2026_at_local_then_utc_dp2_tp2_decode_batches_no_failure_title_says_health_check_failed.log": [],
    "batch22/05_checklist_prose_node1_fence_health_check_failed_line_missing_open_bracket_then_get_health_503_and_post_200_multinode_deepgemm.log": [],
    "batch22/06_checklist_prose_crash_log_fence_glued_to_first_line_without_bracket_prefill_batches_health_generate_200_abort_request_no_traceback_title_says_crashed.log": [],
    "batch22/07_checklist_prose_only_inline_code_scheduler_watchdog_timeout_soft_false_sigquit_kimi_vl_dp_attention_deadlock_no_log_line.log": [],
    "batch22/08_checklist_prose_tp0_tp7_wedge_fenced_pyspy_frames_without_header_native_cudastreamsynchronize_ellipsis_run_batch_event_loop_overlap_no_time.log": [],
    "batch22/09_heading_fence_dp9_tp9_ep2_tpmodelworkerclient_hit_an_exception_forward_thread_frames_with_carets_forward_extend_cut.log": [],
    "batch22/10_comment_prose_docker_health_probes_then_unfenced_runtimeerror_repeats_can_not_be_negative_and_code_line_no_time_no_frame.log": [],
    "batch22/11_pr_motivation_prose_tp2_dp2_without_this_pr_fence_dp0_tp1_scheduler_exception_run_event_loop_dispatch_event_loop_overlap_cut.log": [],
    "batch22/12_checklist_prose_bash_curl_health_generate_loop_script_environment_no_log_title_says_engine_hangs.log": [],
    "batch22/13_prose_fence_multinode_tp24_tp31_load_weight_begin_end_cache_shape_lines_no_failure_title_says_watchdog_collective_timeout.log": [],
    "batch23/01_prose_fence_gcp_reversed_lines_zoned_error_severity_killed_sigquit_keyerror_input_scale_load_weights_fp8.log": [],
    "batch23/02_describe_bug_tp0_prefill_batch_then_warmup_error_assertionerror_502_caret_chinese_killed_then_command.log": [],
    "batch23/03_pr_motivation_fence_importerror_sgl_kernel_common_ops_multiline_message_undefined_symbol_no_time.log": [],
    "batch23/04_fence_tp0_memory_pool_capture_cuda_graph_begin_then_tp0_traceback_flashinfer_call_begin_forward_cut_phi35.log": [],
    "batch23/05_traceback_without_header_scheduler_init_cuda_graphs_exception_capture_cuda_graph_failed_out_of_memory_line_cut_deepep.log": [],
    "batch23/06_fence_tail_runtimeerror_operation_not_permitted_stream_capturing_moe_fused_gate_then_during_handling_cuda_graph_runner_cut.log": [],
    "batch23/07_docker_host_network_warning_prompt_rocm_warnings_syntaxwarning_server_args_cut_no_failure_title_says_hip_error.log": [],
    "batch23/08_pr_motivation_dp_tp_capture_cuda_graph_begin_bs_list_tqdm_0_of_52_then_registering_0_addresses_six_ranks_no_error_printed.log": [],
    "batch23/09_prose_command_fence_startup_complete_uvicorn_get_root_404_then_warmup_error_assertionerror_502_killed_title_says_404.log": [],
    "batch23/10_blockquote_first_line_tp0_ep0_prefill_batches_then_access_200_no_failure_title_says_illegal_memory_access_hicache.log": [],
    "batch23/11_describe_bug_launch_command_fence_fp4_eagle_then_tp0_scheduler_exception_one_frame_caret_cut_title_says_keyerror.log": [],
    "batch23/12_prose_sglang_serve_command_kimi_eagle3_then_tp2_scheduler_exception_maybe_init_draft_worker_cut.log": [],
    "batch23/13_describe_bug_shell_prompts_pip_list_test_script_command_line_vllm_style_info_then_traceback_runpy_cut_title_says_undefined_symbol.log": [],
    "batch23/14_describe_bug_backtick_warning_failed_to_import_vllm_core_c_importerror_undefined_symbol_then_launch_traceback_runpy_cut.log": [],
    "batch24/01_prose_node0_fence_python_iso_z_stamp_then_space_indented_rank3_processgroupnccl_watchdog_timeout_at_work_32_multinode_h200_cut.log": [],
    "batch24/02_fence_faulthandler_mid_dump_tqdm_thread_tail_then_current_thread_weight_loader_qwen3_no_fatal_line_title_says_bus_error_cut.log": [],
    "batch24/03_extension_modules_list_wrapped_then_fatal_python_error_segmentation_fault_current_thread_header_no_frame_cut.log": [],
    "batch24/04_fence_multinode_tp16_world_size_rank_lines_init_torch_distributed_then_nccl_info_ipv6_bootstrap_no_failure_title_says_hangs_before_weights.log": [],
    "batch24/05_bold_prose_fence_generate_200_prefill_batch_then_12_min_gap_tpmodelworkerclient_exception_forward_thread_frames_cut_title_says_deepep_cpu_recv_timeout.log": [],
    "batch24/06_docker_rfc3339_nanosecond_stamps_cpp_frames_15_to_26_scheduler_tp0_then_fatal_python_error_aborted_thread_header_cut.log": [],
    "batch24/07_fence_nccl_info_proxy_lines_hex_hostname_local_rank1_blank_then_nccl_warn_cuda_failure_invalid_argument_p2p_rank0.log": [],
    "batch24/08_traceback_tail_without_header_initialize_model_parallel_pynccl_ncclcomminitrank_nccl_check_runtimeerror_unhandled_system_error_no_time_no_rank.log": [],
    "batch24/09_comments_prose_quote_link_then_backtick_opened_vllm_style_info_lines_automatically_detected_platform_cuda_no_failure_title_says_hangs_after_nccl_init.log": [],
    "batch24/10_checklist_markdown_headings_prose_only_pyspy_stack_and_overlap_schedule_described_no_log_line_title_says_multinode_tp8_hang.log": [],
    "batch24/11_prose_fence_tp10_scheduler_exception_startup_init_torch_distributed_initialize_model_parallel_multinode_child_node_cut.log": [],
    "batch24/12_prose_fence_pdb_prompt_then_tp0_scheduler_exception_event_loop_overlap_bdb_quit_then_killed_and_code_fence_debugger_session.log": [],
    "batch24/13_fence_received_sigquit_then_rank3_gloo_monitored_barrier_error_naming_rank0_then_tp3_scheduler_exception_startup_tp_worker_cut.log": [],
    "batch25/01_docker_compose_prefix_fastchat_stderr_wrapper_excepthook_traceback_sglang_worker_runtime_cut.log": [],
    "batch25/02_prose_command_fastchat_stderr_wrapper_glued_terminal_lines_wrapped_frame_traceback_runtime_cut.log": [],
    "batch25/03_pr_review_double_spaced_plugin_wrapper_warning_import_tqdm_on_stderr_capture_cuda_graph_bs_no_failure_printed.log": [],
    "batch25/04_fence_tail_runtime_endpoint_runtimeerror_initialization_failed_then_xinference_debug_error_request_then_traceback_cut.log": [],
    "batch25/05_docker_compose_xinference_server_prefix_traceback_tail_without_header_stream_generate_aiohttp_readchunk_cut.log": [],
    "batch25/06_prose_pod_logs_over_and_over_traceback_server_args_post_init_cut_title_says_no_architectures.log": [],
    "batch25/07_fence_router_rust_kubernetes_service_discovery_pods_forbidden_403_watcher_retry_backoff.log": [],
    "batch25/08_fence_sse_data_chunks_gpt_oss_reasoning_content_no_failure_title_says_content_dropped.log": [],
    "batch25/09_json_chat_completion_response_finish_reason_stop_content_cut_no_failure_title_says_tool_call.log": [],
    "batch25/10_prose_fence_client_print_chatcompletionmessage_deepseek_tool_calls_begin_leaked_repeated_degenerate.log": [],
    "batch25/11_bench_serving_command_output_error_repr_escaped_chained_traceback_transfer_encoding_error_cut_title_says_deepep.log": [],
    "batch25/12_prose_image_client_traceback_bench_serving_cut_server_crash_only_in_screenshot.log": [],
    "batch26/01_docker_compose_prefix_four_tp_multimodal_embedding_token_mismatch_warnings_then_tp0_scheduler_exception_run_event_loop_cut.log": [],
    "batch26/02_chinese_title_checklist_qwen25vl_multi_image_sigquit_line_then_tp6_scheduler_exception_event_loop_normal_run_batch_cut.log": [],
    "batch26/03_chinese_prose_traceback_without_header_first_frame_one_space_startup_scheduler_init_model_runner_cut.log": [],
    "batch26/04_pr_comment_details_block_embedding_encode_and_embeddings_200_then_prefill_new_token_0_tp0_scheduler_exception_cut.log": [],
    "batch26/05_reward_model_blockquote_commands_then_quote_marker_glued_to_scheduler_exception_no_rank_cut_after_header.log": [],
    "batch26/06_full_traceback_fence_unindented_frames_hicache_mooncake_register_buffer_runtimeerror_eagle_draft_no_time.log": [],
    "batch26/07_pr_motivation_blockquoted_traceback_missing_bracket_hicache_decode_offload_manager_no_rank_cut.log": [],
    "batch26/08_fence_mid_traceback_no_header_hicache_unified_radix_write_backup_memory_pool_host_cut_no_time.log": [],
    "batch26/09_fence_fired_up_chat_completions_200_prefill_batch_health_200_no_failure_title_says_token_indices_too_long.log": [],
    "batch26/10_prose_fence_uvicorn_startup_get_model_info_200_prefill_batch_no_error_line_title_says_xgrammar_wrong_result.log": [],
    "batch26/11_launch_and_bench_serving_commands_then_serving_benchmark_result_table_no_server_log.log": [],
    "batch26/12_multimodal_gen_scheduler_runtimeerror_three_consecutive_errors_then_nccl_warning_and_four_health_200.log": [],
    "batch26/13_pr_comment_prometheus_metrics_sample_help_type_gauges_in_fence_no_log_line.log": [],
    "batch26/14_docker_rfc3339_and_python_logging_wrapper_stamps_qwen2vl_tp0_traceback_cut.log": [],
    "journal/systemd_journal-1.export": [],
    "journal/velociraptor_2004.journal.xz": [],
    "journal/velociraptor_2404.journal.xz": [],
    "journal/velociraptor_system.journal.xz": None,  # truncated: journalctl refuses it, nothing is read
    "pyspy/01_sglang_pp_gloo_waitRecv_native.txt": [],
    "pyspy/02_pytorch_accelerate_deepspeed_backward.txt": [],
    "pyspy/03_accelerate_all_gather_unnamed_threads.txt": [],
    "pyspy/05_vllm_py314_thread_without_name.txt": [],
    "pyspy/06_pyspy_json_locals.txt": [],
    "real2/01_docker_compose_2p2d_mooncake_tcp.log": [],
    "real2/02_router_pd_decode_500_mooncake_readbody.log": [],
    "real2/03_decode_unknown_reason_other_rank_mooncake.log": [],  # no WaitingForInput timeout (F13)
    "real2/04_prefill_scheduler_exception_check_status_truncated.log": [],  # cut before F8's exception
    "real2/05_tsv_export_cp_pp_finish_abort_prefill_batches.log": [],
    "real2/06_nixl_unexpected_transfer_worker_error_prefill_decode_pods.log": [],  # a RuntimeError, not F14's assert
    "real2/07_smg_router_decode_prefill_blocks_mooncake_not_alive.log": [],
    "real2/08_prefill_mooncake_session_not_alive_tp16_req_dump.log": [],
    "real2/09_decode_failed_get_kvcache_midline_paste.log": [],
    "real2/10_pyspy_megatron_grouped_threads_allreduce_recv.txt": [],  # Megatron, no SGLang event loop
    "real2/11_nccl_watchdog_allreduce_seqnum1_multirank.log": [],
    "real2/12_watchdog_dp4_tp4_midline_paste_pyspy_missing.log": [],
    "real2/13_scheduler_debug_info_two_ranks_full_swa_pools.log": [],
    "server_args/01_v0.2_issue1100_cut.log": [],
    "server_args/02_v0.5.8.post1_pd_decode_mooncake.log": [],  # a configuration alone is no match
    "server_args/03_2026-02_glm5_rocm_tp8.log": [],
    "sglang/01_decode_transfer_failed_abortreq_tp.log": [],
    "sglang/02_prefill_bootstrap_failed_tp_ep_and_router.log": [],
    "sglang/04_watchdog_old_format_pyspy_missing.log": [],
    "sglang/05_watchdog_dp_tp_multirank.log": [],
    "sglang/06_pyspy_dump_docker_compose_prefix.log": [],
    "sglang/07_pyspy_dump_pp_disagg_prefill_hang.log": [],
    "sglang/09_pyspy_native_crashdump_main_process.log": [],
    "sglang/10_old_prefill_batch_dot_unbootstrapped_fake_sender.log": [],
    "sglang/11_prefill_batch_custom_logging_config.log": [],
    "sglang/12_router_span_request_id_error.log": [],
    "sglang/13_scheduler_exception_ms_timestamp_disagg_decode.log": [],
    "sglang/15_npu_prefill_decode_batch_tp_ep.log": [],
    "sglang/17_mooncake_bootstrap_aiohttp_access_old_prefill.log": [],
    "sglang/18_http_server_client_disconnect.log": [],
    "sglang/20_nccl_watchdog_dp_reduce_scatter_hang.log": [],  # F4, not encoded
}


def test_every_real_case_is_listed():
    found = {
        str(p.relative_to(CASES))
        for p in CASES.rglob("*")
        if p.is_file() and p.suffix not in (".md", ".toml") and not p.name.startswith(".")
    }
    assert found == set(REAL_CASES)


# the formats whose reading --all-units changes (ingest's ``_chunks``: a journal's or a capture's units, a
# pod's containers; a packed file may hold one); a plain log or a dump has no units to choose
UNIT_FORMATS = {"journal-dir", "journal", "export", "json", "xz", "gz", *containers.FORMATS}


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=case_group(CASES / c), id=c) for c in sorted(REAL_CASES)]
)
def test_real_case_matches_the_families_it_shows(case):
    if case.startswith("journal/") and case.endswith(".xz"):
        need_journalctl()
    path = CASES / case
    # every unit read; for a file without units that is the OUT of the file alone every other test reads
    options = {"opts": ReadOptions(all_units=True)} if sniff(path) in UNIT_FORMATS else {}
    if REAL_CASES[case] is None:
        with pytest.raises(NothingReadError):
            ingested(path, **options)
        return
    assert saved.query(ingested(path, **options), "known_issues")["family"].to_list() == REAL_CASES[case]


def test_real_cases_match_no_family():
    """No case under tests/cases shows an encoded family but batch14/01's F13 (decode's KV transfers timed
    out after 600 s in KVPoll.WaitingForInput; real2/06 has the transfer-worker line with a RuntimeError,
    not the assertion; real2/04 a traceback through the inflight queue cut before its exception). Every
    case file ingested together: the shared OUT test_lines_kept reads too (one ingest a run)."""
    out = ingested(*sorted(p for p in CASES.rglob("*") if p.suffix in (".log", ".txt")))
    assert saved.query(out, "known_issues")["family"].to_list() == ["F13"]
    cfg = saved.query(out, "SELECT * FROM config ORDER BY source")
    # server_args/01-03, and batch3/01 (PD decode, tp 16) and batch3/02 (ROCm, tp 8) since issue 28, and
    # batch7/07, whose server_args a pager cut before tp_size (null, not guessed), and batch13/14 (tp 1, its
    # server_args line broken in two), and batch23/07 (ROCm, its server_args cut mid-key: the model path read,
    # tp_size null)
    assert cfg.height == 8
    assert cfg.filter(pl.col("source").str.contains("batch23/07_"))["model_path"].to_list() == [
        "/data/mistralhf-gptq"
    ]
    assert sorted(cfg["tp_size"].to_list(), key=lambda v: (v is not None, v)) == [
        None,
        None,
        1,
        2,
        8,
        8,
        16,
        16,
    ]
    cut = cfg.filter(cfg["tp_size"] == 2).row(0, named=True)
    assert "line cut short" in cut["note"]


def test_server_args_wins_over_the_command_line_and_a_disagreement_is_shown(tmp_path):
    """A main process whose command line says ``--tp 8 --watchdog-timeout 600`` and whose server_args
    line (the sample's, SGLang 0.5.8.post1 fields) says tp_size=4, watchdog_timeout=3600.0: the line's
    values fill the typed columns, and both differences are named."""
    line = next(
        v
        for v in (SAMPLE / "journal.export").read_text().split("\n")
        if v.startswith("MESSAGE=") and "server_args=ServerArgs(" in v and "'decode'" in v
    )[len("MESSAGE=") :]
    cmd = (
        "/opt/sglang/.venv/bin/python3 -m sglang.launch_server --model-path /models/Llama-3.1-70B-Instruct"
        " --disaggregation-mode decode --disaggregation-transfer-backend nixl --tp 8 --watchdog-timeout 600"
    )
    entry = {
        "__REALTIME_TIMESTAMP": "1761773000000000", "_HOSTNAME": "h1", "_BOOT_ID": "b" * 32,
        "_SYSTEMD_UNIT": "sglang-decode.service", "_PID": "4242", "_CMDLINE": cmd, "MESSAGE": line,
    }  # fmt: skip
    cap = tmp_path / "cap.json"
    cap.write_text(json.dumps(entry) + "\n")
    out = tmp_path / "o"
    ingest([cap], out)
    r = saved.query(out, "SELECT * FROM config").row(0, named=True)
    assert (r["pid"], r["origin"], r["tp_size"], r["watchdog_timeout"]) == (
        4242,
        "server_args+cmdline",
        4,
        3600.0,
    )
    assert (
        r["disagreements"]
        == "tp_size: server_args 4, cmdline 8; watchdog_timeout: server_args 3600.0, cmdline 600"
    )
    assert r["enable_hierarchical_cache"] is False and r["disaggregation_transfer_backend"] == "nixl"


def test_a_command_line_outside_any_unit_is_read(tmp_path):
    # a journal entry with _CMDLINE and no _SYSTEMD_UNIT (a server started by hand): ingest failed
    # with "index 0 is out of bounds" looking for that unit's one command line
    cmd = "/opt/sglang/.venv/bin/python3 -m sglang.launch_server --model-path /m --disaggregation-mode decode --tp 8"
    entry = {
        "__REALTIME_TIMESTAMP": "1761773000000000", "_HOSTNAME": "h1", "_BOOT_ID": "b" * 32,
        "_PID": "4242", "_CMDLINE": cmd, "MESSAGE": "[2025-10-29 21:23:20] INFO: starting",
    }  # fmt: skip
    cap = tmp_path / "cap.json"
    cap.write_text(json.dumps(entry) + "\n")
    ingest([cap], tmp_path / "o")
    r = saved.query(tmp_path / "o", "SELECT * FROM config").row(0, named=True)
    assert (r["pid"], r["unit"], r["origin"], r["tp_size"], r["disaggregation_mode"]) == (
        4242,
        None,
        "cmdline",
        8,
        "decode",
    )


def _f5_capture(path, venv: str) -> None:
    """A decode engine launched from a venv named by its SGLang version (as the real case
    server_args/02 names its shell ``(sglang-0.5.8.post1)``): 12 client aborts, then decode batch lines
    at token usage 0.97 (the sample's line shapes), as ``journalctl -o json`` entries."""
    cmd = (
        f"/opt/{venv}/bin/python3 -m sglang.launch_server --model-path /m --disaggregation-mode decode --tp 2"
    )
    base = int(datetime(2025, 10, 29, 21, 30, tzinfo=UTC).timestamp() * 1e6)
    lines = []
    for i in range(12):
        lines.append((base + i * 400_000, 4100, cmd, "[2025-10-29 21:30:0{}] [http_server] Error: Request is "
                      f"disconnected from the client side (type 3). Abort request obj.rid='{i:032x}'".format(i * 4 // 10)))  # fmt: skip
    for k in range(6):
        t = base + 10_000_000 + k * 2_000_000
        for rank in (0, 1):
            lines.append((t + rank * 500, 4101 + rank, f"sglang::scheduler_TP{rank}",
                          f"[2025-10-29 21:30:{10 + 2 * k} TP{rank}] Decode batch, #running-req: 40, #token: 390000, "
                          "token usage: 0.97, pre-allocated usage: 0.00, #prealloc-req: 3, #transfer-req: 0, "
                          "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 9"))  # fmt: skip
    path.write_text(
        "".join(
            json.dumps(
                {
                    "__REALTIME_TIMESTAMP": str(t),
                    "_HOSTNAME": "h1",
                    "_BOOT_ID": "b" * 32,
                    "_SYSTEMD_UNIT": "sglang-decode.service",
                    "_PID": str(pid),
                    "_CMDLINE": c,
                    "MESSAGE": m,
                }
            )
            + "\n"  # fmt: skip
            for t, pid, c, m in lines
        )
    )


@pytest.mark.parametrize(
    ("venv", "check"),
    [
        ("sglang-0.4.9.post4", "fixed in 0.4.9.post5; this engine runs 0.4.9.post4"),
        ("sglang-0.5.2", "fixed in 0.4.9.post5; this engine runs 0.5.2, which has the fix: look again"),
    ],
)
def test_version_check_of_a_family_with_a_fixed_release(tmp_path, venv, check):
    """F5 (fixed in 0.4.9.post5 by #8352, per the research notes) on an engine whose version its
    command line states: the known_issues row and the report say which release has the fix and what
    this engine runs."""
    from logcorr.render.report import report

    _f5_capture(tmp_path / "cap.json", venv)
    out = tmp_path / "o"
    ingest([tmp_path / "cap.json"], out)
    ki = saved.query(out, "known_issues")
    assert ki["family"].to_list() == ["F5"]
    row = ki.row(0, named=True)
    assert (row["strength"], row["evidence_rows"], row["version_check"]) == ("signature+config", 12, check)
    assert f"Fix: #8352 (v0.4.9.post5); #25561 (2026-05-18), #28022 (2026-06-12); {check}." in report(out)


def test_a_scheduler_crash_line_alone_is_not_f7(tmp_path):
    """SGLang's SubprocessWatchdog line (#18582; the form #29144 quotes, pid elided) says a scheduler
    died and that SGLang noticed: the fix at work, not the zombie state F7 names. A real paste (PR
    #25172: a Mooncake segfault, exit code -11) was called "an NCCL C++ abort while the HTTP server
    stayed up" with nothing showing either."""
    log = tmp_path / "engine.log"
    log.write_text(
        "[2026-05-14 16:49:46] Subprocess scheduler_0 (pid=922727) crashed with exit code -11.\n"
        "[2026-06-10 10:00:00] Subprocess scheduler_0 crashed with exit code -3. Triggering SIGQUIT for cleanup...\n"
    )
    out = tmp_path / "o"
    ingest([log], out)
    assert saved.query(out, "SELECT exit_code FROM watchdogs ORDER BY ts")["exit_code"].to_list() == [-11, -3]
    assert saved.query(out, "known_issues").height == 0


def test_scheduler_crash_then_health_200_is_f7(tmp_path):
    """The zombie state: scheduler_1 dies, and the same engine's HTTP server goes on answering /health
    with 200 for 25 s: F7, from the crash row, with the answers counted."""
    health = [
        f'[2026-06-10 10:00:{s:02d}] INFO:     127.0.0.1:5000{s % 10} - "GET /health HTTP/1.1" 200 OK'
        for s in (5, 15, 25)
    ]
    log = tmp_path / "engine.log"
    log.write_text(
        "[2026-06-10 10:00:00] Subprocess scheduler_1 (pid=4243) crashed with exit code -6.\n"
        + "\n".join(health)
        + "\n"
    )
    out = tmp_path / "o"
    ingest([log], out)
    ki = saved.query(out, "known_issues")
    assert ki["family"].to_list() == ["F7"] and ki["strength"].to_list() == ["signature"]
    assert ki["evidence"][0].startswith(
        "engine scheduler subprocess crashed with exit code -6; its HTTP server answered 2 request(s) with 200 "
        "in the 25.0 s after it [line 1]"
    )


def test_f8_from_its_warnings_and_its_runtime_error(tmp_path):
    """F8's three wordings (research notes, #20686 / #24967 / #31075): the warnings are transfer errors
    of kind inflight_poll_state (a small table for known_issues to read, not every message of a day),
    the RuntimeError a traceback through process_disagg_prefill_inflight_queue."""
    log = tmp_path / "prefill.log"
    log.write_text(
        "[2026-04-01 10:00:00 TP0] Unexpected polling state 1 for rid 0a1b2c3d in inflight queue; treating as undone\n"
        "[2026-04-01 10:00:01 PP1 TP0] PP rank 1: unexpected poll state 1 for rid 0a1b2c3e from consensus; treating as undone\n"
        "[2026-08-01 10:00:02 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/prefill.py", line 500, in process_disagg_prefill_inflight_queue\n'
        '    raise RuntimeError(f"Unexpected poll state {poll} for req {req.rid} in inflight queue")\n'
        "RuntimeError: Unexpected poll state 1 for req 0a1b2c3f in inflight queue\n"
    )
    out = tmp_path / "o"
    ingest([log], out)
    te = saved.query(out, "SELECT role, pp_rank, tp_rank, error_kind FROM transfer_errors ORDER BY ts")
    assert te.rows() == [
        ("prefill", None, 0, "inflight_poll_state"),
        ("prefill", 1, 0, "inflight_poll_state"),
    ]
    ki = saved.query(out, "known_issues")
    assert ki["family"].to_list() == ["F8"] and ki["evidence_rows"].to_list() == [3]
    assert "prefill TP1: RuntimeError in process_disagg_prefill_inflight_queue" in ki["evidence"][0]


def test_the_sections_stay_apart_when_no_family_matches():
    # the no-match sentence ran into "## Configuration" with no blank line between them
    lines = known_issues.report_sections(pl.DataFrame(), pl.DataFrame())
    text = "\n".join(lines)
    assert (
        "never a match).\n\n## Configuration (config)\n\ncannot tell: logcorr read no server_args line"
        in text
    )


def test_a_check_env_paste_states_the_sglang_version_of_its_server_args(tmp_path):
    """Issue 31 item 7: bug reports paste ``python -m sglang.check_env`` (``Key: value`` lines, one per
    package) beside the server_args line. Its ``sglang: 0.5.4.post1`` is the version of that paste's
    engine, whether the lines follow the server_args line (one record) or come first (a record of
    their own); two different versions in one paste name none."""
    env = (
        "Python: 3.12.3 (main, Nov  6 2025, 13:44:16) [GCC 13.2.0]\nCUDA available: True\n"
        "GPU 0,1,2,3,4,5,6,7: NVIDIA H100 80GB HBM3\nPyTorch: 2.8.0+cu128\nsglang: 0.5.4.post1\n"
        "sgl_kernel: 0.3.16.post3\nflashinfer_python: 0.4.1\nnixl: Module Not Found\n"
    )
    line = '[2025-10-29 21:30:00] server_args=ServerArgs(model_path="/m", tp_size=4, disaggregation_mode="decode")\n'
    for name, text, version in [
        ("after.txt", line + env, "0.5.4.post1"),
        ("before.txt", env + line, "0.5.4.post1"),
        ("two.txt", env + line + env.replace("0.5.4.post1", "0.5.2"), None),
    ]:
        (tmp_path / name).write_text(text)
        ingest([tmp_path / name], tmp_path / f"out-{name}")
        cfg = saved.query(tmp_path / f"out-{name}", "SELECT tp_size, sglang_version FROM config")
        assert cfg.rows() == [(4, version)], name


def test_a_version_joined_to_a_batch_line_is_still_read(tmp_path):
    """Issue 33: config observations pass over records that are one batch line (most of a day), not a
    batch record that took in a later unheaded line: a ``sglang: 0.5.4.post1`` pasted right after a
    batch line joins its record and still states the engine's version."""
    text = (
        '[2025-10-29 21:30:00] server_args=ServerArgs(model_path="/m", tp_size=2, disaggregation_mode="decode")\n'
        "[2025-10-29 21:30:05 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, gen throughput (token/s): 40.0, #queue-req: 0\n"
        "[2025-10-29 21:30:06 TP0] Decode batch, #running-req: 3, #token: 960, token usage: 0.01, gen throughput (token/s): 41.0, #queue-req: 0\n"
        "sglang: 0.5.4.post1\n"
    )
    (tmp_path / "decode.log").write_text(text)
    ingest([tmp_path / "decode.log"], tmp_path / "out")
    joined = saved.query(
        tmp_path / "out", "SELECT kind, n_lines FROM events WHERE message LIKE '%0.5.4.post1%'"
    )
    assert joined.rows() == [("batch", 2)]
    cfg = saved.query(tmp_path / "out", "SELECT tp_size, sglang_version FROM config")
    assert cfg.rows() == [(2, "0.5.4.post1")]
