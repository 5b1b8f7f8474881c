-- id: F19
-- title: DeepSeek tool-call markup returned as plain content instead of parsed tool_calls
-- weight: 2
-- links: https://github.com/sgl-project/sglang/issues/17593, https://github.com/sgl-project/sglang/issues/35736, https://github.com/sgl-project/sglang/issues/40236, https://github.com/sgl-project/sglang/pull/40237
-- affects: DeepSeek-V3.1/V3.2/V4 with a deepseek tool-call parser (#17593: v0.5.7, V3.2 chat template emitting V3.1 markup; #35736: V4 with tool_choice none; #40236: bare, unterminated or malformed DSML blocks)
-- needs: a DeepSeek model or a deepseek* --tool-call-parser
-- config: coalesce(model_path ILIKE '%deepseek%', false) OR coalesce(json_extract_string(settings, '$.tool_call_parser') ILIKE 'deepseek%', false)
-- shows: model_path, sglang_version
-- fixed_in:
-- fix: not fixed upstream as of the notes: #40237 open
-- workaround: match --tool-call-parser to the model and its chat template (deepseekv31 for <｜tool▁calls▁begin｜>, deepseekv32 for <｜DSML｜function_calls>), and have clients parse markup left in content
-- explains: answers whose tool calls reached clients as text
-- evidence: an answer in the engine's --log-requests Finish lines whose returned text holds tool-call markup
--   (request_log; saved query markup_leaks adds the requests running at each, which costs a pass over
--   the day's batch lines that the match does not need)
SELECT event_id, ts, host, role, source, source_pos,
       format('answer {} returned {} markup as text ({})', rid, markup_leak, markup) AS what
FROM request_log
WHERE event = 'finished' AND markup_leak IS NOT NULL
