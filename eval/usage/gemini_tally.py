#!/usr/bin/env python3
"""Independent tally of Gemini CLI chat files (HOOKS.md 4.10; gemini-rules.md).

Reads every chat file under ROOT/tmp/<project>/chats/ — `session-*.json` (one JSON object with a
`messages` array, written by releases before the JSONL recorder) and `session-*.jsonl` (a metadata
line, message records, `{"$set": ...}` updates, `{"$rewindTo": id}`) — plus subagent chats in
chats/<parent session id>/<agent id>.jsonl, and prints per (UTC day, model), per session and per
(session, agent) figures as JSON. Written from the format's facts, never from Baton's code;
standard library only.

Rules:
- A request is one `type: "gemini"` message id with a `tokens` object. The recorder writes the same
  message again (tool calls added, a resume's `$set.messages` copy without tokens); per session and
  message id the last copy that carries tokens counts, once. Files are read in sorted path order.
- Figures: input = tokens.input - tokens.cached + tokens.tool (cached is part of the prompt count,
  tool-use prompt tokens are not); cache_read = cached; output = tokens.output + tokens.thoughts
  (thoughts are billed as output); reasoning = thoughts.
- A main file's session is its metadata `sessionId`; a subagent file's session is its folder's
  name and its agent is its own `sessionId`.
"""

import json
import os
import sys
from datetime import datetime, timezone

FIELDS = ["input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "reasoning",
          "web_search_requests", "web_fetch_requests", "requests"]


def zero():
    return {name: 0 for name in FIELDS}


def add(acc, fig):
    for name in FIELDS:
        acc[name] += fig[name]


def figures(tokens):
    count = lambda key: int(tokens.get(key) or 0)
    fig = zero()
    fig["input"] = max(0, count("input") - count("cached")) + count("tool")
    fig["cache_read"] = count("cached")
    fig["output"] = count("output") + count("thoughts")
    fig["reasoning"] = count("thoughts")
    fig["requests"] = 1
    return fig


def records(path):
    """The JSON records of a chat file, in order: the messages of a legacy file, else its lines."""
    text = open(path, encoding="utf-8", errors="replace").read()
    if path.endswith(".json"):
        try:
            whole = json.loads(text)
        except ValueError:
            return []
        meta = {k: v for k, v in whole.items() if k != "messages"}
        return [meta] + list(whole.get("messages") or [])
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("$set"), dict):
            out.extend(m for m in value["$set"].get("messages") or [] if isinstance(m, dict))
        elif isinstance(value, dict):
            out.append(value)
    return out


def chat_files(root):
    tmp = os.path.join(root, "tmp")
    for project in sorted(os.listdir(tmp)):
        chats = os.path.join(tmp, project, "chats")
        if not os.path.isdir(chats):
            continue
        for name in sorted(os.listdir(chats)):
            path = os.path.join(chats, name)
            if os.path.isdir(path):
                for child in sorted(os.listdir(path)):
                    if child.endswith(".jsonl"):
                        yield os.path.join(path, child), name
            elif name.startswith("session-") and name.endswith((".json", ".jsonl")):
                yield path, None


def tally(root):
    kept = {}  # (session, message id) -> (agent, day, model, figures), last copy with tokens
    order = []
    for path, parent in chat_files(root):
        own = None
        for record in records(path):
            if own is None and isinstance(record.get("sessionId"), str):
                own = record["sessionId"]
            if record.get("type") != "gemini" or not isinstance(record.get("tokens"), dict):
                continue
            session = parent or own or os.path.basename(path)
            agent = own if parent else None
            stamp = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
            day = stamp.astimezone(timezone.utc).date().isoformat()
            key = (session, record["id"])
            if key not in kept:
                order.append(key)
            kept[key] = (agent, day, record.get("model") or "unknown", figures(record["tokens"]))
    daily, sessions = {}, {}
    for key in order:
        agent, day, model, fig = kept[key]
        add(daily.setdefault((day, model), zero()), fig)
        add(sessions.setdefault(key[0], {}).setdefault(agent, zero()), fig)
    out_daily = [dict(day=d, model=m, **daily[(d, m)]) for (d, m) in sorted(daily)]
    out_sessions = []
    for sid in sorted(sessions):
        total, agents = zero(), []
        for aid in sorted(sessions[sid], key=lambda a: (a is not None, a or "")):
            add(total, sessions[sid][aid])
            agents.append(dict(agent_id=aid, **sessions[sid][aid]))
        out_sessions.append({"session_id": sid, "agents": agents, "total": total})
    return {"harness": "gemini", "daily": out_daily, "sessions": out_sessions}


if __name__ == "__main__":
    json.dump(tally(sys.argv[1]), sys.stdout, indent=1)
    sys.stdout.write("\n")
