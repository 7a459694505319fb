#!/usr/bin/env python3
"""Independent token-usage tally for OpenAI Codex CLI rollouts (rollout-*.jsonl).

Usage:  python3 codex_tally.py ROOT [ROOT...] [--explain]
        ROOT is a CODEX_HOME-like folder; every rollout-*.jsonl below it is read.
        The JSON report goes to stdout; --explain writes per-file notes to stderr.

Written from the evidence in eval/usage/codex-rules.md (file + line numbers
there; paths below are relative to fixtures/conformance/codex/).  Stdlib only.

RULES (each one is applied exactly as stated; the evidence is named in brackets)
R1  A line is a JSON object {timestamp, type, payload}.  A line that does not parse is
    skipped (a half-written tail); a last line without "\n" is a real line.
R2  Identity of a file = its FIRST session_meta (payload.id, payload.source,
    payload.forked_from_id).  A file without any session_meta (pre-0.30 format) carries
    no usage and is ignored.  [every corpus file, line 1]
R3  Usage comes from event_msg/token_count lines.  payload.info == null carries nothing
    [MoonLadderStudios--MoonMind .../rollout-2025-11-12T17-48-11-019a7ae6-...jsonl l.6].
    info.total_token_usage is cumulative for the running process; info.last_token_usage
    is the usage of the latest response.  Fields: input_tokens, cached_input_tokens,
    output_tokens, reasoning_output_tokens, total_tokens (cache_write_input_tokens when
    present).  cached_input_tokens is inside input_tokens; reasoning_output_tokens is
    inside output_tokens; total = input + output.
R4  Per process, compare each total T (with last L) against the previous total P:
      T == P                          -> repeat, counts nothing  [0.44+: most events twice]
      T >= P field-wise and T-P == L  -> growth, counts T-P (== L)
      T == L (and T != P)             -> a new process started (exec resume appended to
                                         the same file, counter restarted) -> counts T whole
                                         [jarvis-systems--brain-node ...019af6c0...jsonl l.19, l.28, l.38]
      some field of T < P             -> shrink: another process appended -> counts T whole
                                         [MoonMind ...019a7ae6... l.663; Zo-Qore ...019b7313... l.57]
      otherwise (growth with T-P != L)-> counts T-P (growth = usage); noted with --explain
                                         (never seen in the corpus).
R5  Replay: a LATER session_meta whose id differs from the file's first id marks a
    replay of another thread's history (resume into a new file, 0.36
    [Hoper-J--cpolar-connect ...613a9a68... l.2-323]; forked thread_spawn child, 0.114
    [ivanma9--ship ...019ce419-2314... l.2-566]).  The replayed block runs from that
    session_meta to the end of its write burst: the block ends at the first line whose
    timestamp is more than 1.0 s after the line before it.  Replayed token_count lines
    count nothing, but their total becomes the baseline P, so the thread's own first
    event is either growth on top of the replayed total (fork: the child's counter
    continues from the parent's total) or a new count taken whole (resume: the new
    process restarted its counter).  turn_context lines inside the replay still set the
    model in force.
R6  Review echo: between event_msg entered_review_mode and exited_review_mode a parent
    rollout echoes the review thread's own token_count events (a separate counter that
    starts from zero); after exited_review_mode the parent re-emits its pre-review total
    (a repeat).  Echoed events are not the parent's: the parent's baseline P and model
    are restored to their pre-review values at exited_review_mode.  If the review
    thread's own rollout (session_meta.source.subagent == "review") is in the input and
    its counted totals match the echo, the echo is dropped and the review rollout is
    counted (agent kind "review" of the parent's session).  If it is absent, the echo is
    counted once, as agent kind "review", agent_id "<parent id>:review:<n>", under the
    model of a turn_context written inside the echo if any, else the parent's model in
    force (the 0.77 parent never states the review model; only the review rollout does).
    [evidence outside the corpus: 0h-n0/local-voice-assistant-codex, see rules doc]
R7  Model of an event = payload.model of the latest turn_context line before it in the
    same file; none yet -> "unknown" (0.34 files have no turn_context at all).
R8  Agents: session_meta.source {"subagent": {"thread_spawn": {parent_thread_id, depth,
    agent_nickname, agent_role}}} -> kind "thread_spawn", parent = parent_thread_id;
    {"subagent": "review"} -> kind "review"; {"subagent": {"other": "guardian"}} -> kind
    "guardian"; other subagent values -> their name.  A sub-agent's session_id is the
    root of its parent chain (followed through rollouts present in the input; a parent
    not present is taken as the root); agent_id = the child's own id.  A child whose
    parent is not named (review/guardian without a linked echo) is its own session.
    A non-subagent file with forked_from_id is a session of its own, agent kind "fork".
    Every other file is the main agent (agent_id null) of session = its first id.
R9  token_usage_record lines (one per response; 0.171+; not present in the corpus):
    when a file has any outside a replay, its usage is taken from them instead of
    token_count (deduplicated by response_id; payload.usage), by rules R5-R7.
R10 Output figures per event: input = input_tokens - cached_input_tokens -
    cache_write_input_tokens (uncached), cache_read = cached_input_tokens,
    cache_write_5m = cache_write_input_tokens (0 if absent), cache_write_1h = 0,
    output = output_tokens (reasoning included), reasoning = reasoning_output_tokens,
    web_search_requests = web_fetch_requests = 0 (the format states none),
    requests = number of counted events.  Day = UTC date of the token_count line's
    timestamp.  Identical files (same bytes) are read once.
"""
import datetime as _dt
import hashlib
import json
import os
import sys

KEYS = ("input_tokens", "cached_input_tokens", "output_tokens",
        "reasoning_output_tokens", "total_tokens", "cache_write_input_tokens")
FIELDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h",
          "reasoning", "web_search_requests", "web_fetch_requests", "requests")
BURST_GAP = 1.0  # seconds, R5


def vec(d):
    d = d or {}
    return tuple(int(d.get(k) or 0) for k in KEYS)


def ts_of(s):
    if not isinstance(s, str):
        return None
    try:
        t = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.astimezone(_dt.timezone.utc)


def figures(v):
    inp, cached, out, reas, _tot, cw = v
    return {"input": inp - cached - cw, "output": out, "cache_read": cached,
            "cache_write_5m": cw, "cache_write_1h": 0, "reasoning": reas,
            "web_search_requests": 0, "web_fetch_requests": 0, "requests": 1}


def kind_of(source, forked_from):
    """R8: (kind, parent id or None)."""
    if isinstance(source, dict) and "subagent" in source:
        sub = source["subagent"]
        if isinstance(sub, str):
            return sub, None
        if isinstance(sub, dict):
            if "thread_spawn" in sub:
                ts = sub["thread_spawn"] or {}
                return "thread_spawn", ts.get("parent_thread_id")
            if "other" in sub:
                return str(sub["other"]), None
            return next(iter(sub), "subagent"), None
        return "subagent", None
    if forked_from:
        return "fork", None
    return "main", None


class Counter:
    """R4: one cumulative counter (a process, or a review echo)."""

    def __init__(self):
        self.prev = None

    def step(self, total, last):
        """-> (usage vector or None, how)."""
        p = self.prev
        self.prev = total
        if p is None:
            return total, "first"
        if total == p:
            return None, "repeat"
        if all(a >= b for a, b in zip(total, p)):
            d = tuple(a - b for a, b in zip(total, p))
            if d == last:
                return d, "growth"
            if total == last:
                return total, "restart"
            return d, "growth-mismatch"
        return total, "shrink"


def read_lines(path):
    out = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                o = json.loads(raw)
            except ValueError:
                continue  # R1
            if isinstance(o, dict):
                out.append((n, o))
    return out


def parse_file(path, explain):
    lines = read_lines(path)
    metas = [(n, o) for n, o in lines if o.get("type") == "session_meta"]
    if not metas:
        return None  # R2
    first = metas[0][1].get("payload") or {}
    fid = first.get("id")
    kind, parent = kind_of(first.get("source"), first.get("forked_from_id"))
    info = {"path": path, "id": fid, "kind": kind, "parent": parent,
            "meta_ts": ts_of(metas[0][1].get("timestamp")), "events": [],
            "echoes": [], "notes": []}

    # R5: replay ranges (indexes into `lines`)
    in_replay = [False] * len(lines)
    for i, (n, o) in enumerate(lines):
        if o.get("type") != "session_meta" or i == 0:
            continue
        if (o.get("payload") or {}).get("id") in (None, fid):
            continue
        j = i
        prev_t = ts_of(o.get("timestamp"))
        while j < len(lines):
            t = ts_of(lines[j][1].get("timestamp"))
            if j > i and t is not None and prev_t is not None and \
                    (t - prev_t).total_seconds() > BURST_GAP:
                break
            in_replay[j] = True
            if t is not None:
                prev_t = t
            j += 1
        info["notes"].append("replay lines %d-%d (embedded session_meta %s)"
                             % (n, lines[j - 1][0], (o.get("payload") or {}).get("id")))

    use_records = any(o.get("type") == "token_usage_record" and not in_replay[i]
                      for i, (n, o) in enumerate(lines))  # R9
    seen_resp = set()
    main = Counter()
    model = "unknown"
    echo = None  # dict while inside a review echo
    for i, (n, o) in enumerate(lines):
        typ = o.get("type")
        p = o.get("payload") if isinstance(o.get("payload"), dict) else {}
        ptype = p.get("type")
        if typ == "turn_context":
            if p.get("model"):
                if echo is not None:
                    echo["model"] = p["model"]
                else:
                    model = p["model"]
            continue
        if typ == "event_msg" and ptype == "entered_review_mode" and not in_replay[i]:
            echo = {"line": n, "counter": Counter(), "model": None,
                    "saved_prev": main.prev, "events": [], "totals": []}
            continue
        if typ == "event_msg" and ptype == "exited_review_mode" and not in_replay[i]:
            if echo is not None:
                main.prev = echo["saved_prev"]
                info["echoes"].append(echo)
                info["notes"].append("review echo lines %d-%d: %d events"
                                     % (echo["line"], n, len(echo["events"])))
            echo = None
            continue
        t = ts_of(o.get("timestamp"))
        if use_records:
            if typ != "token_usage_record" or in_replay[i]:
                continue
            rid = p.get("response_id")
            if rid is not None and rid in seen_resp:
                continue
            seen_resp.add(rid)
            v = vec(p.get("usage"))
            target = echo["events"] if echo is not None else info["events"]
            target.append((t, (echo["model"] or model) if echo is not None else model, v, n))
            continue
        if not (typ == "event_msg" and ptype == "token_count"):
            continue
        tinfo = p.get("info")
        if not isinstance(tinfo, dict):
            continue  # R3: info null
        total, last = vec(tinfo.get("total_token_usage")), vec(tinfo.get("last_token_usage"))
        if in_replay[i]:
            main.prev = total  # R5 baseline
            continue
        if echo is not None:
            u, how = echo["counter"].step(total, last)
            if u is not None:
                echo["events"].append((t, echo["model"] or model, u, n))
                echo["totals"].append(total)
            continue
        u, how = main.step(total, last)
        if how in ("restart", "shrink", "growth-mismatch"):
            info["notes"].append("line %d: %s" % (n, how))
        if u is not None:
            info["events"].append((t, model, u, n))
            info.setdefault("totals", []).append(total)
    if echo is not None:  # review never exited: keep what was echoed
        info["echoes"].append(echo)
        info["notes"].append("review echo from line %d never exited" % echo["line"])
    if explain:
        sys.stderr.write("%s\n  id=%s kind=%s parent=%s events=%d\n" % (
            path, fid, kind, parent, len(info["events"])))
        for note in info["notes"]:
            sys.stderr.write("  %s\n" % note)
    return info


def add(acc, fig):
    for k in FIELDS:
        acc[k] = acc.get(k, 0) + fig[k]


def zero():
    return {k: 0 for k in FIELDS}


def tally(roots, explain=False):
    paths = []
    for root in roots:
        for dp, _dn, fn in os.walk(root):
            for f in fn:
                if f.startswith("rollout-") and f.endswith(".jsonl"):
                    paths.append(os.path.join(dp, f))
    files, seen = [], set()
    for path in sorted(paths):
        with open(path, "rb") as f:
            h = hashlib.sha256(f.read()).hexdigest()
        if h in seen:
            continue
        seen.add(h)
        info = parse_file(path, explain)
        if info is not None and info["id"]:
            files.append(info)
    by_id = {}
    for f in files:
        by_id.setdefault(f["id"], f)

    # R6: link echoes to review rollouts
    reviews = [f for f in files if f["kind"] == "review"]
    for f in files:
        for k, e in enumerate(f["echoes"], 1):
            e["agent_id"] = "%s:review:%d" % (f["id"], k)
            for r in reviews:
                rt = r.get("totals", [])
                et = e["totals"]
                n = min(len(rt), len(et))
                if n and rt[:n] == et[:n] and not r.get("linked_parent"):
                    r["linked_parent"] = f["id"]
                    e["linked"] = r["id"]
                    break

    def root_of(fid, depth=0):
        f = by_id.get(fid)
        if f is None or depth > 50:
            return fid
        par = f["parent"] or f.get("linked_parent")
        if par is None:
            return fid
        return root_of(par, depth + 1)

    daily, sessions = {}, {}

    def book(sid, agent_id, kind, t, mdl, u):
        fig = figures(u)
        day = t.date().isoformat() if t else "unknown"
        add(daily.setdefault((day, mdl), zero()), fig)
        agents = sessions.setdefault(sid, {})
        add(agents.setdefault((agent_id, kind), zero()), fig)

    for f in files:
        sid = root_of(f["id"])
        is_child = sid != f["id"]
        agent_id = f["id"] if is_child else None
        for t, mdl, u, _n in f["events"]:
            book(sid, agent_id, f["kind"], t, mdl, u)
        if not f["events"]:
            sessions.setdefault(sid, {}).setdefault((agent_id, f["kind"]), zero())
        for e in f["echoes"]:
            if e.get("linked"):
                continue
            for t, mdl, u, _n in e["events"]:
                book(sid, e["agent_id"], "review", t, mdl, u)

    out_daily = []
    for (day, mdl) in sorted(daily):
        row = {"day": day, "model": mdl}
        row.update(daily[(day, mdl)])
        out_daily.append(row)
    out_sessions = []
    for sid in sorted(sessions):
        agents, tot = [], zero()
        for (aid, kind) in sorted(sessions[sid], key=lambda x: (x[0] is not None, x[0] or "", x[1])):
            row = {"agent_id": aid, "kind": kind}
            row.update(sessions[sid][(aid, kind)])
            add(tot, row)
            agents.append(row)
        out_sessions.append({"session_id": sid, "agents": agents, "total": tot})
    return {"harness": "codex", "daily": out_daily, "sessions": out_sessions}


def main(argv):
    explain = "--explain" in argv
    roots = [a for a in argv if a != "--explain"]
    if not roots:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    json.dump(tally(roots, explain), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
