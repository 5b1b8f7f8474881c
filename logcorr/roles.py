"""Role attribution, in one place: each record's role (``schema.ROLES``) from what names it, then the
role of a process, a pod or an input reaching every record of it.

What names a role (the text rules are ``parsers/roles.py``'s), first match wins per record:
``--role UNIT=ROLE``, the unit's name, the ``--disaggregation-mode`` of its command line; the
record's own text (a batch line without a PD key is an ``engine``, a traceback's event loop, an
error that only one side prints); a frame's event loop, a ``server_args`` line's
``disaggregation_mode``, the pod or host name the text prints as its own (``text_role``); the
record's host name (a k8s pod ``…-prefill-0``).

Then the role flows (``RoleFlow``): a reporter's prose line that names one serving half (a label
"Prefill node:", "errors on multiple decode workers", "D节点…"; ``text_rules.label_role``), and a pasted
prompt running ``kubectl logs POD`` (``text_rules.command_role``), gives its half to the records after it
that name none, up to the next prose line or prompt; a process (source, host, pid) whose records show one role gives
it to its records that show none; an input whose records carry no unit and no host (a plain log, a
paste, its worker or compose streams) and whose records show one engine role gives it to its
records that show none, HTTP access
lines aside; an input whose plain records show an SGLang process (``SGLANG_CUE``: a record it logged,
not a path of its package in a traceback frame) and no role and no prefill-decode cue anywhere
(``PD_CUE``) is served by an ``engine`` (SGLang's default is no PD). A scope that shows
``prefill`` or ``decode`` and also ``engine`` (a batch line printed without PD keys) is that half of
a PD pair: its ``engine`` records take it too. A scope that shows two roles gives none. The flow
runs forward through an input: a role first shown in a later 16 MiB chunk does not reach the
records of earlier chunks, already written.
"""

from __future__ import annotations

import polars as pl

from logcorr.parsers import roles as text_rules

PD_HALVES = ("prefill", "decode")
ENGINE_ROLES = ("prefill", "decode", "engine")
INPUT_SCOPE_SKIPS = ["request", "health"]  # kinds of HTTP access lines


def unit_roles(recs: pl.DataFrame, overrides: dict[str, str]) -> pl.Series:
    """Each record's role from its unit: ``--role`` (``overrides``), else what the unit's name says,
    else the ``--disaggregation-mode`` its command line passes (``parsers.roles``); null where none.
    Worked out once per distinct (unit, cmdline): a chunk holds a handful of them and a million rows."""
    unit = pl.col("unit").fill_null("")
    overrides = text_rules.unit_names(overrides)
    by_unit = unit.replace_strict(overrides, default=None) if overrides else pl.lit(None, pl.String)
    role = pl.coalesce(by_unit, text_rules.role_expr(unit), text_rules.mode_expr(pl.col("cmdline")))
    keys = recs.select("unit", "cmdline")
    distinct = keys.unique().with_columns(role.alias("role"))
    joined = keys.join(distinct, on=["unit", "cmdline"], how="left", nulls_equal=True, maintain_order="left")
    return joined["role"]


def record_roles(df: pl.DataFrame, content_role: pl.Series, overrides: dict[str, str]) -> pl.Series:
    """The role each record of ``df`` (``unit``, ``cmdline``, ``host``, ``message``) names by itself, in the
    order of the module doc: its unit, ``content_role`` (``sglang.classify``'s), ``text_role`` of its
    text, its host's name. ``unknown`` where a journal's unit choice said so, else null where nothing
    names one (``RoleFlow`` may still give it one)."""
    by_unit = unit_roles(df, overrides)
    named = by_unit.is_not_null() & (by_unit != "unknown")
    need = ~named & content_role.is_null()  # only these are searched: a day's journal has units
    text = pl.Series([None] * df.height, dtype=pl.String)
    if need.any():
        at = need.arg_true()
        text = text.scatter(at, text_rules.text_role(df["message"].gather(at)))
    hosts = pl.DataFrame({"h": df["host"].drop_nulls().unique()})
    by_name = dict(hosts.select("h", text_rules.name_role_expr(pl.col("h"))).drop_nulls().iter_rows())
    by_host = df["host"].replace_strict(by_name, default=None, return_dtype=pl.String)
    return pl.select(
        pl.coalesce(pl.when(named).then(by_unit), content_role, text, by_host, by_unit)
    ).to_series()


def scope_role(shown: set[str]) -> str | None:
    """The one role a scope's records show (``unknown`` not counted; ``engine`` beside one PD half is
    that half), else None."""
    named = {r for r in shown if r and r != "unknown"}
    halves = named - {"engine"}
    if len(halves) == 1 and (halves <= set(PD_HALVES) or "engine" not in named):
        return halves.pop()
    return "engine" if named == {"engine"} else None


class RoleFlow:
    """The roles shown so far per process (source, host, pid) and per input, across the chunks of one
    ingest; ``__call__`` gives a chunk's records the role of their scope (see the module doc)."""

    def __init__(self) -> None:
        self.processes: dict[tuple, set[str]] = {}
        self.inputs: dict[str, set[str]] = {}
        self.labels: dict[str, str] = {}  # per input: the role of the last label line read
        self.sglang: set[str] = set()  # inputs whose plain records show an SGLang process
        self.pd_cue: set[str] = set()  # inputs whose plain records show a prefill-decode cue

    def __call__(self, df: pl.DataFrame) -> pl.DataFrame:
        """``df`` (events columns, ``role`` null or ``unknown`` where nothing named one) with the roles
        of their process, then of their input, filled in; ``role`` never null."""
        df = self._by_label(df)
        df = self._by_process(df)
        df = self._by_input(df)
        return df.with_columns(pl.col("role").fill_null("unknown"))

    def _by_label(self, df: pl.DataFrame) -> pl.DataFrame:
        """Records after a reporter's prose line that names a half (``text_rules.label_role``: a label
        "Prefill node:", "errors … on multiple decode workers"; a line of no kind, header or printed
        time that starts with a letter) or after a pasted prompt whose command prints one pod's logs
        (``text_rules.command_role``: ``kubectl logs POD``), whatever their kind (an access line
        too), up to the next prose line or prompt, in the same input and across its
        chunks, take that half where their own text names none or only ``engine``. Only records with a
        printed time (with or without a year), a known header or a kind of their own: the prose and
        fences around a block stay as read. The label rules run on the prose lines only (a journal's
        chunk holds few)."""
        # a record: a kind of its own, a printed time (with or without a year) or a known header
        stamped = [pl.col(c).is_not_null() for c in ("log_ts", "printed_time", "header") if c in df.columns]
        record = (pl.col("kind") != "other") | pl.any_horizontal(stamped)
        prose = df.select(~record & pl.col("message").str.contains(r"^\p{L}")).to_series()
        # a pasted prompt and its command: `kubectl logs POD` gives the pod's half, any other ends a label
        said = text_rules.command_role(df["message"])
        prose = prose | said.is_not_null()
        at = prose.arg_true()
        if not at.len() and not self.labels:  # no prose, no label carried: most chunks of a journal
            return df
        said = pl.select(
            pl.coalesce(pl.lit(said.gather(at)), pl.lit(text_rules.label_role(df["message"].gather(at))))
        ).to_series()
        said = said.fill_null("")
        if not self.labels and not (said != "").any():
            return df
        marks = pl.Series("_label", [None] * df.height, pl.String).scatter(at, said)
        carried = df["source"].replace_strict(self.labels, default=None, return_dtype=pl.String)
        found = pl.DataFrame({"source": df["source"], "_label": marks, "_carried": carried}).select(
            "source", pl.col("_label").forward_fill().over("source").fill_null(pl.col("_carried"))
        )
        for src, last in found.group_by("source").agg(pl.col("_label").last()).iter_rows():
            if last:
                self.labels[src] = last
            else:  # a prose line ended the label (or none was read)
                self.labels.pop(src, None)
        scope = pl.when(record & (found["_label"] != "")).then(found["_label"])
        return _take_scope(df.with_columns(scope.alias("_scope_role")))

    def _by_process(self, df: pl.DataFrame) -> pl.DataFrame:
        """A process takes the one role its records show (in this chunk or an earlier one of the same
        input); a process none of whose records shows a role takes the one role of the rids it names
        (an HTTP server process aborting requests its scheduler ranks logged)."""
        if df.select(pl.col("pid").is_null().all()).item():
            return df
        key = ["source", "host", "pid"]
        known = pl.col("role").is_not_null() & (pl.col("role") != "unknown")
        shown = df.filter(pl.col("pid").is_not_null() & known).group_by(key).agg(pl.col("role").unique())
        by_rid = df.filter(known & pl.col("rid").is_not_null()).group_by("rid").agg(pl.col("role").unique())
        by_rid = by_rid.filter(pl.col("role").list.len() == 1).select("rid", pl.col("role").list.first())
        silent = (
            df.filter(pl.col("pid").is_not_null() & pl.col("rid").is_not_null())
            .select(*key, "rid")
            .join(shown.select(key), on=key, how="anti", nulls_equal=True)
            .join(by_rid, on="rid")
            .group_by(key)
            .agg(pl.col("role").unique())
        )
        for src, host, pid, shown_roles in pl.concat([shown, silent]).iter_rows():
            self.processes.setdefault((src, host, pid), set()).update(shown_roles)
        scoped = [(*k, r) for k, s in self.processes.items() if (r := scope_role(s))]
        if not scoped:
            return df
        known = pl.DataFrame(
            scoped,
            schema={"source": pl.String, "host": pl.String, "pid": pl.Int32, "_scope_role": pl.String},
            orient="row",
        )
        df = df.join(known, on=key, how="left", nulls_equal=True, maintain_order="left")
        return _take_scope(df)

    def _by_input(self, df: pl.DataFrame) -> pl.DataFrame:
        """Records with no host and no systemd unit (a plain log, a paste, its worker or compose
        streams) take the one engine role (prefill,
        decode, engine) their input's records show: an engine's stream holds its ranks' lines, its
        warnings and its libraries' output. Not the router's (a router prints only its own format:
        other lines beside it are a paste of another stream), and not to HTTP access lines
        (``INPUT_SCOPE_SKIPS``: an engine and a mini_lb both serve HTTP; the line cannot tell whose)."""
        for src, shown_roles in df.group_by("source").agg(pl.col("role").drop_nulls().unique()).iter_rows():
            self.inputs.setdefault(src, set()).update(shown_roles)
        # a unit that is no systemd unit (a Ray/vLLM worker prefix, a compose service) is a stream of
        # the same paste: it takes the input's one engine role too
        no_unit = pl.col("unit").is_null() | ~pl.col("unit").str.contains(r"\.(?:service|scope)$")
        self._learn_cues(df.filter(no_unit))
        scoped = {
            s: r for s, shown in self.inputs.items() if (r := self._input_role(s, shown)) in ENGINE_ROLES
        }
        if not scoped:
            return df
        anonymous = no_unit & pl.col("host").is_null() & ~pl.col("kind").is_in(INPUT_SCOPE_SKIPS)
        scope = pl.when(anonymous).then(pl.col("source").replace_strict(scoped, default=None))
        return _take_scope(df.with_columns(scope.alias("_scope_role")))

    def _learn_cues(self, plain: pl.DataFrame) -> None:
        """Note which inputs' plain records (no systemd unit) show an SGLang process and which a
        prefill-decode cue (``text_rules.SGLANG_CUE``, ``PD_CUE``); each pattern runs on an input only
        until it is found there."""
        for attr, rx in (("sglang", text_rules.SGLANG_CUE), ("pd_cue", text_rules.PD_CUE)):
            seen: set[str] = getattr(self, attr)
            todo = plain.filter(~pl.col("source").is_in(list(seen)))
            if todo.height:
                hits = todo.filter(pl.col("message").str.contains(rx))["source"].unique()
                seen.update(hits.to_list())

    def _input_role(self, source: str, shown: set[str]) -> str | None:
        """The input's one role (``scope_role``); for an SGLang input that names none and shows no
        prefill-decode cue so far, ``engine``: a server with no ``--disaggregation-mode`` is no half."""
        role = scope_role(shown)
        if role is None and not (shown - {"unknown"}) and source in self.sglang and source not in self.pd_cue:
            return "engine"
        return role


def _take_scope(df: pl.DataFrame) -> pl.DataFrame:
    """``role`` from ``_scope_role`` where the record shows none, or shows ``engine`` and its scope
    is a PD half; ``_scope_role`` dropped."""
    role, scope = pl.col("role"), pl.col("_scope_role")
    takes = scope.is_not_null() & (
        role.is_null() | (role == "unknown") | ((role == "engine") & scope.is_in(PD_HALVES))
    )
    return df.with_columns(pl.when(takes).then(scope).otherwise(role).alias("role")).drop("_scope_role")
