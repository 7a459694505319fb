#!/usr/bin/env python3
"""claude_tally.py - an independent usage tally for Claude Code JSONL transcripts.

Usage:  python3 claude_tally.py ROOT [ROOT...] > out.json
        (diagnostics go to stderr; stdout is only the JSON result)

Written from the format facts in HOOKS.md (the team's harness facts) section 4 (cited below as
"H4.x"), not from any other parser. Standard library only.

RULES (each with the fact that decides it)
-------------------------------------------
R1  Files. Every regular file whose name ends in ".jsonl" anywhere under each ROOT is
    read: main transcripts `projects/<slug>/<sessionId>.jsonl`, sidecars under
    `<sessionId>/subagents/**` (recursive, incl. `agent-acompact-*`), legacy sibling
    `agent-*.jsonl`. Non-.jsonl files (meta.json, tool-results) are ignored.
    [H4.1: subagent files live in `<session>/subagents/`, nested folders reported ->
    scan recursively, ignore non-.jsonl; before v2.1.2 `agent-*.jsonl` were siblings.]
    Files are visited in sorted path order so the result never depends on directory
    listing order. All ROOTs given on one command line form ONE corpus (one dedup).

R2  Lines. A file's bytes are split at b"\\n". Empty (whitespace-only) segments are
    ignored. Every complete line that does not parse as one JSON object is skipped and
    counted as malformed. The final segment after the last "\\n" (no trailing newline)
    counts when it parses as one complete JSON object; otherwise it is skipped and
    counted as an incomplete tail.
    [H4.9: copied/archived transcripts often end with a complete line and no "\\n"; only
    a line that does not parse is half-written. H4.2: ~0.6% malformed lines occur ->
    always skip malformed lines.]

R3  Which lines carry usage. Only top-level `type == "assistant"` lines whose
    `message` is an object holding a `usage` object. Usage copied into other lines
    (e.g. `progress` lines with data.type == "agent_progress", `toolUseResult.usage`)
    is never counted.
    [H4.4 last bullet: agent_progress lines embed copies of subagent messages with the
    same msg id/requestId -> only count top-level assistant lines. H4.6a: ccusage's
    session report does the same.]

R4  `<synthetic>` lines are excluded: `message.model == "<synthetic>"` means no API
    request was made (all-zero usage, UUID message id, no requestId).  [H4.6]

R5  Dedup. Lines are grouped across ALL files of the corpus by
    (message.id, requestId); when requestId is missing or empty the key is
    (message.id,) alone. A line with no message.id cannot be matched to anything and is
    its own group (never observed in the corpus; counted in diagnostics).
    [H4.4: one API response is persisted as one line per content block, all sharing
    message.id and requestId; ccusage falls back to message.id alone when requestId is
    missing.]

R6  Per group, per token field, the MAXIMUM over the group's lines is kept.
    Input and cache fields are identical within a group; output_tokens may grow
    (first < last seen, never first > last), so max == last == the best lower bound.
    [H4.4: "Within a group, input/cache fields are identical; output_tokens may grow".]
    Note: for client versions < 2.1.97 output is still often a streaming placeholder
    (H4.4); the tally reports what the file says and does not estimate.

R7  Attribution of a group (day, model, session, agent) comes from one representative
    line: the first line in (sorted path, line number) order among the group's
    non-sidechain lines if there are any, else the first of its sidechain lines.
    [Brief + H4.4: on a sidechain/non-sidechain collision keep the non-sidechain entry
    (`/btw` replays under subagents/ reuse the parent's message.id).]
    The first line is used (not the last) because it is the one written when the
    response began; all lines of a group are normally within seconds of each other.

R8  Token kinds (all ints; a missing/null/non-int field counts 0):
      input          = usage.input_tokens            (uncached input)
      output         = usage.output_tokens
      cache_read     = usage.cache_read_input_tokens
      cache_write_5m = usage.cache_creation.ephemeral_5m_input_tokens   if usage.cache_creation is an object
      cache_write_1h = usage.cache_creation.ephemeral_1h_input_tokens   if usage.cache_creation is an object
                       else cache_write_5m = usage.cache_creation_input_tokens, cache_write_1h = 0
      web_search_requests = usage.server_tool_use.web_search_requests
      web_fetch_requests  = usage.server_tool_use.web_fetch_requests
      reasoning      = 0 (Claude transcripts carry thinking inside output_tokens)
    [H4.3: keys seen; both 5m and 1h writes occur and are priced separately; v2.1.152
    fixed cache_creation_input_tokens being 0 when only the nested breakdown was set ->
    use 5m + 1h when cache_creation exists, else cache_creation_input_tokens.
    Older transcripts (v1.x) lack cache_creation entirely; their writes were 5m.]

R9  day   = UTC calendar date of the representative line's `timestamp` (ISO-8601; "Z"
            or an offset are converted to UTC). A usage line without a parseable
            timestamp is skipped and counted (never observed in the corpus).
    model = representative line's `message.model`, exactly as written.   [H4.2]

R10 session = the representative line's `sessionId` (sidecar lines carry the PARENT's
    session id) [H4.5 item 4]. agent = the line's `agentId` when the line has
    isSidechain == true, an agentId, and sits in a sidecar file (a path containing a
    `subagents` directory, or a legacy file named `agent-*.jsonl`); every other line
    (main file, inline sidechains of very old versions without a file of their own) is
    the main agent (agent_id null). `acompact-*` agents are compaction calls: real
    billable usage attributed to their own agent id under the session [H4.5 item 6].

R11 `requests` = number of deduplicated groups counted.

WHAT THE REAL FILES SHOWED (conformance corpus, 8 repos, 47 sessions, v2.0.64-2.1.219)
--------------------------------------------------------------------------------------
* R2: 8 files end with a complete JSON line and no "\n" (Entire checkpoints, v2.0.64-
  2.1.36) -> counted. One real malformed line: an assistant line with usage and a
  `summary` line glued together without "\n" (v2.1.12 file). It is skipped; its response
  is still counted once because the other content-block lines of the same response parse.
* R5/R6: 0 groups with unequal input/cache values; output grows in 294 groups, all in
  files from versions < 2.1.97, none in 2.1.101-2.1.219 files (the 2.1.97 fix, H4.4).
  No message.id occurs with two different requestIds, and no group mixes sidechain and
  non-sidechain lines here, so R7's tie-break never fires in this corpus.
* R3: main files whose sidecars are absent (Entire keeps only the main transcript) still
  hold `agent_progress` copies of subagent requests. They are NOT counted (H4.4); this
  is the only class of difference against ccusage's daily report (see
  claude-vs-ccusage.md). Sessions agree exactly with ccusage's session report.
* R10: a sidecar without its main file (spotter 6c2214d7, main file absent) is counted
  under its parent session id with its own agent id.

OUTPUT (stable key order, ints only):
  {"harness": "claude-code",
   "daily": [{"day","model","input","output","cache_read","cache_write_5m",
              "cache_write_1h","reasoning","web_search_requests","web_fetch_requests",
              "requests"} ... sorted by (day, model)],
   "sessions": [{"session_id", "agents": [{"agent_id": null|"id", <same token fields>,
                 "requests"} ... main (null) first, then by agent id],
                 "total": {<same token fields>, "requests"}} ... sorted by session_id]}
Only sessions/days with at least one counted request appear.
"""

import json
import os
import sys
from datetime import datetime, timezone

FIELDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h",
          "reasoning", "web_search_requests", "web_fetch_requests")


def as_int(v):
    """Token counts are ints; anything else (None, str, float, bool) counts 0."""
    if isinstance(v, bool) or not isinstance(v, int):
        return 0
    return v


def list_jsonl(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            if name.endswith(".jsonl"):
                p = os.path.join(dirpath, name)
                if os.path.isfile(p):
                    out.append(p)
    return out


def iter_objects(path, diag):
    """Yield (line_no, obj) for every JSON object line (R2)."""
    with open(path, "rb") as fh:
        data = fh.read()
    segments = data.split(b"\n")
    tail = segments.pop()  # text after the last "\n" ("" when the file ends with "\n")
    n = 0
    for n, seg in enumerate(segments, 1):
        if not seg.strip():
            continue
        try:
            obj = json.loads(seg)
        except ValueError:
            diag["malformed_lines"] += 1
            continue
        if not isinstance(obj, dict):
            diag["malformed_lines"] += 1
            continue
        yield n, obj
    if tail.strip():
        try:
            obj = json.loads(tail)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            diag["final_line_without_newline_counted"] += 1
            yield n + 1, obj
        else:
            diag["incomplete_tail_skipped"] += 1


def usage_values(usage):
    """R8: the token kinds of one usage object."""
    v = dict.fromkeys(FIELDS, 0)
    v["input"] = as_int(usage.get("input_tokens"))
    v["output"] = as_int(usage.get("output_tokens"))
    v["cache_read"] = as_int(usage.get("cache_read_input_tokens"))
    cc = usage.get("cache_creation")
    if isinstance(cc, dict):
        v["cache_write_5m"] = as_int(cc.get("ephemeral_5m_input_tokens"))
        v["cache_write_1h"] = as_int(cc.get("ephemeral_1h_input_tokens"))
    else:
        v["cache_write_5m"] = as_int(usage.get("cache_creation_input_tokens"))
    stu = usage.get("server_tool_use")
    if isinstance(stu, dict):
        v["web_search_requests"] = as_int(stu.get("web_search_requests"))
        v["web_fetch_requests"] = as_int(stu.get("web_fetch_requests"))
    return v


def utc_day(ts):
    """R9: UTC date of an ISO-8601 timestamp, or None."""
    if not isinstance(ts, str) or not ts:
        return None
    s = ts.strip()
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:  # no zone written: Claude Code writes UTC
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).date().isoformat()


def is_sidecar_file(path):
    parts = os.path.normpath(path).split(os.sep)
    return "subagents" in parts[:-1] or parts[-1].startswith("agent-")


def tally(roots):
    diag = {"files": 0, "malformed_lines": 0, "final_line_without_newline_counted": 0,
            "incomplete_tail_skipped": 0, "usage_lines": 0, "synthetic_lines": 0,
            "usage_lines_without_timestamp": 0, "usage_lines_without_message_id": 0,
            "usage_lines_without_request_id": 0, "groups": 0,
            "groups_with_sidechain_and_main_lines": 0,
            "groups_with_unequal_input_or_cache": 0, "groups_where_output_grew": 0,
            "message_ids_with_several_request_ids": 0}
    paths = []
    for root in roots:
        paths.extend(list_jsonl(root))
    paths = sorted(set(paths))
    groups = {}      # key -> group record
    order = []       # keys in first-seen order
    reqids_by_msg = {}
    for path in paths:
        diag["files"] += 1
        sidecar = is_sidecar_file(path)
        for line_no, obj in iter_objects(path, diag):
            if obj.get("type") != "assistant":
                continue                                   # R3
            msg = obj.get("message")
            if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
                continue                                   # R3
            if msg.get("model") == "<synthetic>":
                diag["synthetic_lines"] += 1
                continue                                   # R4
            diag["usage_lines"] += 1
            day = utc_day(obj.get("timestamp"))
            if day is None:
                diag["usage_lines_without_timestamp"] += 1
                continue                                   # R9
            mid = msg.get("id")
            rid = obj.get("requestId")
            if not rid:
                diag["usage_lines_without_request_id"] += 1
            if not mid:
                diag["usage_lines_without_message_id"] += 1
                key = ("<no-id>", path, line_no)           # R5: its own group
            else:
                key = (mid, rid) if rid else (mid,)        # R5
                if rid:
                    reqids_by_msg.setdefault(mid, set()).add(rid)
            side = obj.get("isSidechain") is True
            agent = None
            if side and sidecar and isinstance(obj.get("agentId"), str) and obj["agentId"]:
                agent = obj["agentId"]                     # R10
            line = {"day": day, "model": msg.get("model"), "session": obj.get("sessionId"),
                    "agent": agent, "side": side, "vals": usage_values(msg["usage"])}
            g = groups.get(key)
            if g is None:
                groups[key] = {"lines": [line]}
                order.append(key)
            else:
                g["lines"].append(line)
    daily = {}
    sessions = {}
    for key in order:
        lines = groups[key]["lines"]
        diag["groups"] += 1
        mains = [ln for ln in lines if not ln["side"]]
        if mains and len(mains) != len(lines):
            diag["groups_with_sidechain_and_main_lines"] += 1
        rep = (mains or lines)[0]                          # R7
        vals = {f: max(ln["vals"][f] for ln in lines) for f in FIELDS}   # R6
        if any(len({ln["vals"][f] for ln in lines}) > 1
               for f in ("input", "cache_read", "cache_write_5m", "cache_write_1h")):
            diag["groups_with_unequal_input_or_cache"] += 1
        if lines[-1]["vals"]["output"] > lines[0]["vals"]["output"]:
            diag["groups_where_output_grew"] += 1
        model = rep["model"] if isinstance(rep["model"], str) else ""
        dk = (rep["day"], model)
        d = daily.setdefault(dk, dict.fromkeys(FIELDS + ("requests",), 0))
        sid = rep["session"] if isinstance(rep["session"], str) else ""
        s = sessions.setdefault(sid, {})
        a = s.setdefault(rep["agent"], dict.fromkeys(FIELDS + ("requests",), 0))
        for f in FIELDS:
            d[f] += vals[f]
            a[f] += vals[f]
        d["requests"] += 1
        a["requests"] += 1
    diag["message_ids_with_several_request_ids"] = sum(
        1 for v in reqids_by_msg.values() if len(v) > 1)

    out_daily = []
    for (day, model) in sorted(daily):
        row = {"day": day, "model": model}
        row.update(daily[(day, model)])
        out_daily.append(row)
    out_sessions = []
    for sid in sorted(sessions):
        agents = sessions[sid]
        akeys = sorted(agents, key=lambda k: (k is not None, k or ""))
        alist = []
        total = dict.fromkeys(FIELDS + ("requests",), 0)
        for k in akeys:
            row = {"agent_id": k}
            row.update(agents[k])
            alist.append(row)
            for f in FIELDS + ("requests",):
                total[f] += agents[k][f]
        out_sessions.append({"session_id": sid, "agents": alist, "total": total})
    return {"harness": "claude-code", "daily": out_daily, "sessions": out_sessions}, diag


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        print("usage: claude_tally.py ROOT [ROOT...] > out.json", file=sys.stderr)
        return 2
    for r in argv[1:]:
        if not os.path.isdir(r):
            print("not a directory: %s" % r, file=sys.stderr)
            return 2
    result, diag = tally(argv[1:])
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    print(json.dumps(diag, sort_keys=True), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
