"""Writes Baton's Grafana dashboards (the *.json files next to this script).

Dashboards as code: the panels are declared here once, in a few lines each, and rendered to the
JSON that Grafana provisions (deploy/observability/grafana/provisioning). Edit this file, run
`python3 deploy/observability/dashboards/generate.py`, commit both; `.ci/deploy-checks` runs it
with `--check` and fails when the JSON is stale, and deploy/checks/metricscheck.py checks that
every query names a metric in deploy/observability/metrics.yaml.

Queries read the Prometheus names the collector derives (otel-collector.yaml): durations in
seconds for HTTP (http_server_request_duration_seconds) and milliseconds for gRPC
(rpc_server_duration_milliseconds), so the gRPC panels divide by 1000 and show seconds too.
"""

from __future__ import annotations

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).parent
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
HOOK = 'http_route=~"/api/v1/.+",http_route!~"/api/v1/(openapi\\\\.json|_test/.*)"'
ROUTE = HOOK + ',http_route=~"$route"'
RPC = 'service_name=~"$service"'


def panel(title, exprs, unit="short", kind="timeseries", description="", legend="{{label}}"):
    """One panel: `exprs` is a list of (PromQL, legend) pairs."""
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom"}},
        "targets": [
            {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": text, "datasource": DATASOURCE}
            for i, (expr, text) in enumerate(exprs)
        ],
    }


def quantile(q, series, by, where, scale=""):
    return (
        f"histogram_quantile({q}, sum by (le, {by}) "
        f"(rate({series}_bucket{{{where}}}[$__rate_interval]))){scale}"
    )


def variable(name, query, label):
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": name},
        "definition": query,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {"text": "All", "value": "$__all"},
        "refresh": 2,
        "sort": 1,
    }


def dashboard(uid, title, description, panels, variables=()):
    laid_out = []
    for index, item in enumerate(panels):
        width = 24 if item["type"] == "text" else 12
        item = dict(item, id=index + 1, gridPos={"h": 8, "w": width, "x": (index % 2) * 12, "y": (index // 2) * 8})
        laid_out.append(item)
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["baton"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "editable": False,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": list(variables)},
        "panels": laid_out,
    }


def hook_api():
    count = f"http_server_request_duration_seconds_count{{{ROUTE}}}"
    return dashboard(
        "baton-hook-api",
        "Baton / Hook API",
        "The hook-facing REST routes (gateway): rate, errors, latency per route template, and the SLOs.",
        [
            panel("Requests per second by route", [(f"sum by (http_route) (rate({count}[$__rate_interval]))", "{{http_route}}")], "reqps"),
            panel(
                "5xx ratio by route",
                [(
                    f'sum by (http_route) (rate(http_server_request_duration_seconds_count{{{ROUTE},http_response_status_code=~"5.."}}[$__rate_interval]))'
                    f" / sum by (http_route) (rate({count}[$__rate_interval]))",
                    "{{http_route}}",
                )],
                "percentunit",
                description="Share of requests answered with a 5xx: what the availability SLO counts as bad.",
            ),
            panel("p50 latency by route", [(quantile(0.5, "http_server_request_duration_seconds", "http_route", ROUTE), "{{http_route}}")], "s"),
            panel("p99 latency by route", [(quantile(0.99, "http_server_request_duration_seconds", "http_route", ROUTE), "{{http_route}}")], "s"),
            panel(
                "Responses by status",
                [(f"sum by (http_response_status_code) (rate({count}[$__rate_interval]))", "{{http_response_status_code}}")],
                "reqps",
                description="4xx are the callers' (bad key, bad body, rate limit); 5xx are Baton's.",
            ),
            panel(
                "Availability SLO: error ratio vs budget (99.9 %)",
                [("baton:hook_errors:ratio_rate1h", "1 h"), ("baton:hook_errors:ratio_rate6h", "6 h"), ("baton:hook_errors:ratio_rate3d", "3 d"), ("vector(0.001)", "budget (0.1 %)")],
                "percentunit",
                description="From the recording rules in alerts/baton.rules.yaml; a line above 14.4x the budget over 1 h pages.",
            ),
            panel(
                "Latency SLO: share slower than 250 ms vs budget (1 %)",
                [("baton:hook_slow:ratio_rate1h", "1 h"), ("baton:hook_slow:ratio_rate6h", "6 h"), ("baton:hook_slow:ratio_rate3d", "3 d"), ("vector(0.01)", "budget (1 %)")],
                "percentunit",
            ),
            panel(
                "Requests per second by gateway pod",
                [(f"sum by (k8s_pod_name) (rate({count}[$__rate_interval]))", "{{k8s_pod_name}}")],
                "reqps",
                description="What the gateway HPA scales on (baton_http_server_requests_per_second, target 50 per pod).",
            ),
        ],
        [variable("route", f"label_values(http_server_request_duration_seconds_count{{{HOOK}}}, http_route)", "Route")],
    )


def rpcs():
    server = "rpc_server_duration_milliseconds"
    return dashboard(
        "baton-rpc",
        "Baton / Services (gRPC)",
        "Each service's RPCs as served (server side), the calls it makes (client side) and its database operations.",
        [
            panel("Calls per second by method", [(f"sum by (service_name, rpc_method) (rate({server}_count{{{RPC}}}[$__rate_interval]))", "{{service_name}} {{rpc_method}}")], "reqps"),
            panel(
                "Errors per second by method and code",
                [(f'sum by (service_name, rpc_method, rpc_grpc_status_code) (rate({server}_count{{{RPC},rpc_grpc_status_code!="0"}}[$__rate_interval]))', "{{service_name}} {{rpc_method}} {{rpc_grpc_status_code}}")],
                "reqps",
                description="Non-OK gRPC status codes (5 NOT_FOUND and 9 FAILED_PRECONDITION are domain answers; 13, 14 and 4 are failures).",
            ),
            panel("p50 server latency by method", [(quantile(0.5, server, "service_name, rpc_method", RPC, " / 1000"), "{{service_name}} {{rpc_method}}")], "s"),
            panel("p99 server latency by method", [(quantile(0.99, server, "service_name, rpc_method", RPC, " / 1000"), "{{service_name}} {{rpc_method}}")], "s"),
            panel(
                "p99 client latency by callee",
                [(quantile(0.99, "rpc_client_duration_milliseconds", "service_name, rpc_service", RPC, " / 1000"), "{{service_name}} -> {{rpc_service}}")],
                "s",
                description="Includes the network and the callee's queueing: compare with the callee's server p99.",
            ),
            panel(
                "p99 database operation latency",
                [(quantile(0.99, "db_client_operation_duration_seconds", "service_name, db_operation_name", RPC), "{{service_name}} {{db_operation_name}}")],
                "s",
            ),
        ],
        [variable("service", f"label_values({server}_count, service_name)", "Service")],
    )


def bus():
    return dashboard(
        "baton-bus",
        "Baton / Bus",
        "The transactional outbox, RabbitMQ queues and dead-letter queues, publishes and redeliveries.",
        [
            panel("Messages published per second", [("sum by (messaging_destination_name) (rate(baton_bus_published_total[$__rate_interval]))", "{{messaging_destination_name}}")], "short"),
            panel("Outbox depth", [("max by (outbox) (baton_outbox_depth)", "{{outbox}}")], "short", description="Rows written but not yet confirmed by the broker. Near zero when healthy."),
            panel("Queue depth (ready, unacked)", [
                ('sum by (queue) (rabbitmq_queue_messages_ready{queue!~".+\\\\.dead-letter"})', "{{queue}} ready"),
                ('sum by (queue) (rabbitmq_queue_messages_unacked{queue!~".+\\\\.dead-letter"})', "{{queue}} unacked"),
            ], "short"),
            panel("Dead-letter depth", [('sum by (queue) (rabbitmq_queue_messages{queue=~".+\\\\.dead-letter"})', "{{queue}}")], "short", description="Messages that exhausted x-delivery-limit. Should be zero."),
            panel("Redeliveries per second", [("sum by (messaging_destination_name) (rate(baton_bus_redeliveries_total[$__rate_interval]))", "{{messaging_destination_name}}")], "short", description="Messages handed out again after a nack or a consumer crash."),
        ],
    )


def closer():
    return dashboard(
        "baton-closer",
        "Baton / Closer",
        "Closer passes by outcome, the lag from a run's close to its settled pass, judge tokens against the budget.",
        [
            panel("Passes per second by result", [("sum by (result) (rate(baton_closer_passes_total[$__rate_interval]))", "{{result}}")], "short"),
            panel("Lag from close to settled pass (p50, p95, p99)", [
                ("histogram_quantile(0.5, sum by (le) (rate(baton_closer_lag_seconds_bucket[$__rate_interval])))", "p50"),
                ("histogram_quantile(0.95, sum by (le) (rate(baton_closer_lag_seconds_bucket[$__rate_interval])))", "p95"),
                ("histogram_quantile(0.99, sum by (le) (rate(baton_closer_lag_seconds_bucket[$__rate_interval])))", "p99"),
            ], "s", description="SLO: 99 % within an hour (alerts CloserLagBudgetBurn*)."),
            panel("Lag SLO: share later than 1 h vs budget (1 %)", [("baton:closer_late:ratio_rate1h", "1 h"), ("baton:closer_late:ratio_rate6h", "6 h"), ("vector(0.01)", "budget (1 %)")], "percentunit"),
            panel("Judge tokens per second", [("sum by (kind) (rate(baton_closer_judge_tokens_total[$__rate_interval]))", "{{kind}}")], "short", description="openai judge only: the default (local) judge spends no tokens, so this panel stays empty under it."),
            panel("Highest tenant's share of its monthly token budget", [("max(baton_closer_budget_utilization_ratio)", "used"), ("vector(1)", "budget")], "percentunit", description="openai judge only (the default judge has no token budget, so this stays empty under it). At 100 % that tenant's passes are refused until the month turns."),
            panel("Closer queue", [('sum(rabbitmq_queue_messages_ready{queue=~".+\\\\.closer\\\\.session-closed"})', "ready"), ('sum(rabbitmq_queue_messages_unacked{queue=~".+\\\\.closer\\\\.session-closed"})', "in progress")], "short", description="What the closer HPA scales on (100 ready per replica)."),
        ],
    )


def sweep():
    return dashboard(
        "baton-sweep",
        "Baton / Sweep",
        "The lease-expiry sweep: how often it runs and how many runs each pass closes.",
        [
            panel("Sweep passes per hour", [("sum(increase(baton_closer_sweep_closed_count[1h]))", "passes")], "short"),
            panel("Runs closed per hour", [("sum(increase(baton_closer_sweep_closed_sum[1h]))", "closed")], "short"),
            panel("Runs closed per sweep pass (p50, p99)", [
                ("histogram_quantile(0.5, sum by (le) (rate(baton_closer_sweep_closed_bucket[$__rate_interval])))", "p50"),
                ("histogram_quantile(0.99, sum by (le) (rate(baton_closer_sweep_closed_bucket[$__rate_interval])))", "p99"),
            ], "short"),
            panel("Mean runs closed per pass", [("sum(rate(baton_closer_sweep_closed_sum[$__rate_interval])) / sum(rate(baton_closer_sweep_closed_count[$__rate_interval]))", "mean")], "short", description="A jump means many clients stopped pulsing at once (a network or client fault), not only idle sessions."),
        ],
    )


def usage():
    uploads = "baton_usage_uploads_total"
    stored = 'baton_usage_outcome!="refused"'
    return dashboard(
        "baton-usage",
        "Baton / Usage",
        "Usage uploads from the hooks (UploadBatch): rate by outcome, refusals by code, rows per batch, store latency, and how far the usage figures trail the machines' activity.",
        [
            panel(
                "Uploads per second by outcome",
                [(f"sum by (baton_usage_outcome) (rate({uploads}[$__rate_interval]))", "{{baton_usage_outcome}}")],
                "reqps",
                description="accepted: stored. refused: a 4xx code, the batch or its caller at fault, nothing written. failed: a 5xx code (database, timeout), nothing written; the hook retries.",
            ),
            panel(
                "Refusals and failures per second by code",
                [(
                    f'sum by (baton_usage_outcome, error_type) (rate({uploads}{{baton_usage_outcome!="accepted"}}[$__rate_interval]))',
                    "{{baton_usage_outcome}} {{error_type}}",
                )],
                "reqps",
                description="invalid_input: a batch outside the server's bounds (often a hook older or newer than the server). not_found: a fact names a session or agent not stored. service_unavailable / internal_error: Baton's side.",
            ),
            panel(
                "Refused share vs alert threshold (5 %)",
                [
                    (
                        f'sum(rate({uploads}{{baton_usage_outcome="refused"}}[15m])) / sum(rate({uploads}[15m]))',
                        "refused, 15 m",
                    ),
                    ("vector(0.05)", "UsageUploadsRefused (5 %)"),
                ],
                "percentunit",
                description="What UsageUploadsRefused reads. Failed uploads are not in it: they are 5xx, counted by the hook API availability SLO.",
            ),
            panel(
                "Upload store latency (p50, p99) vs alert bound (2.5 s)",
                [
                    (f"histogram_quantile(0.5, sum by (le) (rate(baton_usage_upload_duration_seconds_bucket{{{stored}}}[$__rate_interval])))", "p50"),
                    (f"histogram_quantile(0.99, sum by (le) (rate(baton_usage_upload_duration_seconds_bucket{{{stored}}}[$__rate_interval])))", "p99"),
                    ("vector(2.5)", "UsageUploadSlow (2.5 s)"),
                ],
                "s",
                description="An upload's store work (price table, the tenant's upload lock, the transaction), accepted and failed uploads; refusals are cheap and left out. A call abandoned at the 10 s timeout counts as failed.",
            ),
            panel(
                "Usage rows per accepted batch (p50, p99, mean)",
                [
                    ("histogram_quantile(0.5, sum by (le) (rate(baton_usage_batch_rows_bucket[$__rate_interval])))", "p50"),
                    ("histogram_quantile(0.99, sum by (le) (rate(baton_usage_batch_rows_bucket[$__rate_interval])))", "p99"),
                    ("sum(rate(baton_usage_batch_rows_sum[$__rate_interval])) / sum(rate(baton_usage_batch_rows_count[$__rate_interval]))", "mean"),
                ],
                "short",
                description="Rows sent, stored or unchanged; a batch holds at most 10 000. Batches of deliveries alone have none.",
            ),
            panel(
                "Usage rows received per second",
                [("sum(rate(baton_usage_batch_rows_sum[$__rate_interval]))", "rows")],
                "short",
            ),
            panel(
                "Ingest delay: newest stored row's age at upload (p50, p99)",
                [
                    ("histogram_quantile(0.5, sum by (le) (rate(baton_usage_ingest_delay_seconds_bucket[$__rate_interval])))", "p50"),
                    ("histogram_quantile(0.99, sum by (le) (rate(baton_usage_ingest_delay_seconds_bucket[$__rate_interval])))", "p99"),
                ],
                "s",
                description="The rollup lag. Rollups are written in the upload's transaction, so they never trail the stored rows; they trail the machines by how late the hook uploads. Per accepted batch that inserted or replaced rows: the newest such row's age. Hours after a machine was offline is expected.",
            ),
        ],
    )


def notify():
    failures = "baton_notify_attempt_failures_total"
    return dashboard(
        "baton-notify",
        "Baton / Notify",
        "Webhook deliveries of budget and runaway alerts: settled deliveries by outcome, failed attempts by reason, attempt latency, and the backlog of pending deliveries (how many are retrying).",
        [
            panel(
                "Deliveries settled per second by outcome",
                [("sum by (baton_notify_outcome) (rate(baton_notify_deliveries_total[$__rate_interval]))", "{{baton_notify_outcome}}")],
                "ops",
                description="delivered: a receiver answered 2xx. failed: every attempt (BATON_NOTIFY__MAX_ATTEMPTS) failed; the tenant's delivery log shows why.",
            ),
            panel(
                "Failed attempts per second by reason",
                [(f"sum by (baton_notify_reason) (rate({failures}[$__rate_interval]))", "{{baton_notify_reason}}")],
                "ops",
                description="http_status: the receiver answered, not 2xx. timeout, dns, connect: it did not answer. address_refused: the URL resolved only to private or otherwise non-public addresses (hosted mode). A failed attempt is retried with backoff.",
            ),
            panel(
                "Pending deliveries (retry depth)",
                [("sum by (baton_notify_retrying) (baton_notify_backlog)", "retrying={{baton_notify_retrying}}")],
                "short",
                description="Deliveries waiting for an attempt, across tenants. retrying=true: already failed at least once and waiting for a backoff. A growing retrying=false line means the workers are not keeping up.",
            ),
            panel(
                "Attempt latency (p50, p99)",
                [
                    ("histogram_quantile(0.5, sum by (le) (rate(baton_notify_attempt_duration_seconds_bucket[$__rate_interval])))", "p50"),
                    ("histogram_quantile(0.99, sum by (le) (rate(baton_notify_attempt_duration_seconds_bucket[$__rate_interval])))", "p99"),
                ],
                "s",
                description="One POST: connecting, TLS and the receiver's answer, bounded by BATON_NOTIFY__REQUEST_TIMEOUT.",
            ),
        ],
    )


BOARDS = {
    "hook-api": hook_api,
    "rpc": rpcs,
    "bus": bus,
    "closer": closer,
    "sweep": sweep,
    "usage": usage,
    "notify": notify,
}


def render() -> dict[str, str]:
    return {f"{name}.json": json.dumps(make(), indent=2, sort_keys=True) + "\n" for name, make in BOARDS.items()}


def main(argv: list[str]) -> int:
    stale = []
    for name, text in render().items():
        path = HERE / name
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"[dashboards] stale: {', '.join(stale)}; run python3 {__file__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
