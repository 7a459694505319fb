#!/usr/bin/env python3
"""Independent tally of GitHub Copilot CLI session logs (/work/notes/copilot-findings.md section 6;
the package's schemas/session-events.schema.json).

Reads ROOT/session-state/<session id>/events.jsonl and prints per (UTC day, model), per session
and per (session, agent) figures as JSON. Written from the format's facts, never from Baton's
code; standard library only.

Rules:
- A request is one `session.usage_record` event (`data.usage`). Its identity is
  `data.usage.accounting.(sourceSessionId, sequence)`; the same identity seen twice counts once
  (first copy). `assistant.usage` (ephemeral), `session.shutdown` and `session.usage_checkpoint`
  (cumulative) are never counted.
- Figures: `inputTokens` holds the whole prompt, cache reads and cache writes included, so
  input = inputTokens - cacheReadTokens - cacheWriteTokens (never below 0); cache_read =
  cacheReadTokens; cache_write_5m = cacheWriteTokens; output = outputTokens (reasoning is inside
  it); reasoning = reasoningTokens.
- The session is the folder's name; the agent is the event's top-level `agentId` (none = main).
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


def figures(usage):
    count = lambda key: int(usage.get(key) or 0)
    fig = zero()
    fig["input"] = max(0, count("inputTokens") - count("cacheReadTokens") - count("cacheWriteTokens"))
    fig["cache_read"] = count("cacheReadTokens")
    fig["cache_write_5m"] = count("cacheWriteTokens")
    fig["output"] = count("outputTokens")
    fig["reasoning"] = count("reasoningTokens")
    fig["requests"] = 1
    return fig


def logs(root):
    state = os.path.join(root, "session-state")
    for name in sorted(os.listdir(state)):
        path = os.path.join(state, name, "events.jsonl")
        if os.path.isfile(path):
            yield name, path


def tally(root):
    seen = set()
    daily, sessions = {}, {}
    for session, path in logs(root):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("type") != "session.usage_record":
                    continue
                usage = event["data"]["usage"]
                accounting = usage.get("accounting") or {}
                key = (accounting.get("sourceSessionId"), accounting.get("sequence")) \
                    if accounting else ("event", event.get("id"))
                if key in seen:
                    continue
                seen.add(key)
                stamp = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
                day = stamp.astimezone(timezone.utc).date().isoformat()
                fig = figures(usage)
                add(daily.setdefault((day, usage.get("model") or "unknown"), zero()), fig)
                add(sessions.setdefault(session, {}).setdefault(event.get("agentId"), zero()), fig)
    out_daily = [dict(day=d, model=m, **daily[(d, m)]) for (d, m) in sorted(daily)]
    out_sessions = []
    for sid in sorted(sessions):
        total, agents = zero(), []
        for aid in sorted(sessions[sid], key=lambda a: (a is not None, a or "")):
            add(total, sessions[sid][aid])
            agents.append(dict(agent_id=aid, **sessions[sid][aid]))
        out_sessions.append({"session_id": sid, "agents": agents, "total": total})
    return {"harness": "copilot", "daily": out_daily, "sessions": out_sessions}


if __name__ == "__main__":
    json.dump(tally(sys.argv[1]), sys.stdout, indent=1)
    sys.stdout.write("\n")
