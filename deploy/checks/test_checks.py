"""Table-driven tests of the deploy checks' rules, and of deploy/healthcheck.sh against real
listeners. Run by .ci/deploy-checks (`python -m unittest discover deploy/checks`)."""

from __future__ import annotations

import http.server
import os
import pathlib
import socket
import subprocess
import tempfile
import threading
import unittest

import bucketcheck
import dockercheck
import envcheck
import metricscheck

ROOT = pathlib.Path(__file__).resolve().parents[2]


class LoopbackAndRequirement(unittest.TestCase):
    def test_loopback_values_are_recognised_in_addresses_and_urls(self):
        cases = [
            ("127.0.0.1:50051", True),
            ("localhost:8080", True),
            ("[::1]:50051", True),
            ("postgres://127.0.0.1:5432/baton", True),
            ("amqp://guest:guest@127.0.0.1:5672/%2f", True),
            ("postgres://u:p@localhost/baton", True),
            ("0.0.0.0:8080", False),
            ("baton-registry:50051", False),
            ("postgres://baton_registry@postgres.baton-deps.svc:5432/baton", False),
            ("amqps://u:p@10.0.0.5:5671/%2f", False),
        ]
        for value, loopback in cases:
            with self.subTest(value=value):
                self.assertEqual(envcheck.is_loopback(value), loopback)

    def test_a_read_is_required_with_a_loopback_default_or_as_the_service_token(self):
        cases = [
            # (key, default) -> (required, no_loopback)
            ("BATON_REGISTRY__LISTEN", "127.0.0.1:50051", (True, True)),
            ("BATON_AMQP_URL", "amqp://guest:***@127.0.0.1:5672/%2f", (True, True)),
            ("BATON_CLOSER__JUDGE", "evidence", (False, False)),
            ("BATON_REGISTRY__SESSION_LEASE", "1day", (False, False)),
            ("BATON_REGISTRY__DATABASE_URL", None, (False, False)),
            ("BATON_SERVICE_TOKEN", None, (True, True)),
        ]
        for key, default, expected in cases:
            with self.subTest(key=key):
                self.assertEqual(envcheck.requirement(key, default), expected)

    def test_the_settings_list_is_read_strictly(self):
        text = (
            "# comment\n"
            "serve closer\tBATON_CLOSER__LISTEN\t127.0.0.1:50054\t\n"
            "serve closer\tBATON_CLOSER__ENABLED\tfalse\tBATON_CLOSER_ENABLED\n"
        )
        spec = envcheck.parse_settings(text)["serve closer"]
        self.assertEqual(spec.known, {"BATON_CLOSER__LISTEN", "BATON_CLOSER__ENABLED"})
        self.assertTrue(spec.reads["BATON_CLOSER__LISTEN"].required)
        self.assertEqual(spec.renamed, {"BATON_CLOSER_ENABLED": "BATON_CLOSER__ENABLED"})
        with self.assertRaises(ValueError):
            envcheck.parse_settings("serve closer\tBATON_CLOSER__LISTEN\n")


class Programs(unittest.TestCase):
    def test_the_program_comes_from_the_command_line(self):
        cases = [
            ({"args": ["serve", "registry", "--no-migrate"]}, "serve registry"),
            ({"args": ["migrate"]}, "migrate"),
            ({"command": ["/bin/sh", "-c"], "args": ["until baton migrate --check; do sleep 5; done"]}, "migrate"),
            ({"command": ["sleep", "5"]}, None),
            ({"args": ["tenant", "create"]}, None),
        ]
        for container, program in cases:
            with self.subTest(container=container):
                self.assertEqual(envcheck.program_of(container), program)


class SchemaWait(unittest.TestCase):
    def test_a_serving_pod_needs_the_schema_check_init_container(self):
        loop = {"command": ["/bin/sh", "-c"], "args": ["until baton migrate --check; do sleep 5; done"]}
        cases = [
            ({"initContainers": [loop]}, True),
            ({"initContainers": [{"args": ["migrate", "--check"]}]}, True),
            ({"initContainers": [{"args": ["migrate"]}]}, False),
            ({}, False),
        ]
        for pod, waits in cases:
            with self.subTest(pod=pod):
                self.assertEqual(envcheck.waits_for_schema(pod), waits)


SPEC = envcheck.Spec(
    "serve registry",
    known={"BATON_DATABASE_URL", "BATON_REGISTRY__DATABASE_URL", "BATON_REGISTRY__MAINTENANCE_DATABASE_URL", "BATON_SERVICE_TOKEN", "BATON_REGISTRY__LISTEN"},
    reads={
        "BATON_DATABASE_URL": envcheck.Read("BATON_DATABASE_URL", True, True),
        "BATON_REGISTRY__DATABASE_URL": envcheck.Read("BATON_REGISTRY__DATABASE_URL", False, False),
        "BATON_REGISTRY__MAINTENANCE_DATABASE_URL": envcheck.Read("BATON_REGISTRY__MAINTENANCE_DATABASE_URL", False, False),
        "BATON_SERVICE_TOKEN": envcheck.Read("BATON_SERVICE_TOKEN", True, True),
        "BATON_REGISTRY__LISTEN": envcheck.Read("BATON_REGISTRY__LISTEN", True, True),
    },
)
GOOD = {
    "BATON_SERVICE_TOKEN": "t" * 20,
    "BATON_REGISTRY__LISTEN": "0.0.0.0:50051",
    "BATON_REGISTRY__DATABASE_URL": "postgres://baton_registry@db/baton",
    "BATON_REGISTRY__MAINTENANCE_DATABASE_URL": "postgres://baton_registry_maint@db/baton",
}


class Missing(unittest.TestCase):
    def test_what_a_container_lacks(self):
        without = lambda key: {k: v for k, v in GOOD.items() if k != key}  # noqa: E731
        cases = [
            ("everything set", GOOD, []),
            # The crash-loop of issue 13: the maintenance pool falls back to the loopback base.
            ("no maintenance URL", without("BATON_REGISTRY__MAINTENANCE_DATABASE_URL"), ["serve registry: BATON_DATABASE_URL is not set"]),
            ("base URL instead of overrides", {**without("BATON_REGISTRY__DATABASE_URL"), "BATON_DATABASE_URL": "postgres://db/baton"}, []),
            ("no token", without("BATON_SERVICE_TOKEN"), ["serve registry: BATON_SERVICE_TOKEN is not set"]),
            ("loopback listener", {**GOOD, "BATON_REGISTRY__LISTEN": "127.0.0.1:50051"}, ["serve registry: BATON_REGISTRY__LISTEN points at loopback (127.0.0.1:50051)"]),
            ("empty value", {**GOOD, "BATON_SERVICE_TOKEN": "  "}, ["serve registry: BATON_SERVICE_TOKEN is not set"]),
        ]
        for name, env, expected in cases:
            with self.subTest(name):
                self.assertEqual(envcheck.missing(SPEC, env), expected)

    def test_conditional_keys_follow_their_setting(self):
        spec = envcheck.Spec("serve closer", {"BATON_CLOSER__JUDGE_URL", "BATON_CLOSER__JUDGE"}, {
            "BATON_CLOSER__JUDGE_URL": envcheck.Read("BATON_CLOSER__JUDGE_URL", False, False),
        })
        self.assertEqual(envcheck.missing(spec, {}), [])
        self.assertEqual(envcheck.missing(spec, {"BATON_CLOSER__JUDGE": "openai"}), ["serve closer: BATON_CLOSER__JUDGE_URL is not set"])

    def test_the_real_settings_name_the_keys_the_manifests_must_carry(self):
        specs = envcheck.load_specs(ROOT)
        required = {p: {k for k, r in s.reads.items() if r.required} for p, s in specs.items()}
        self.assertIn("BATON_AMQP_URL", required["serve registry"])
        self.assertIn("BATON_SERVICE_TOKEN", required["serve gateway"])
        self.assertIn("BATON_REGISTRY__ADDR", required["serve triage"])
        self.assertIn("BATON_DATABASE_URL", required["migrate"])
        self.assertNotIn("BATON_AMQP_URL", specs["serve triage"].known)


class MetricNames(unittest.TestCase):
    def test_prometheus_names_follow_the_collector(self):
        cases = [
            ("http.server.request.duration", "histogram", "s", "http_server_request_duration_seconds"),
            ("rpc.server.duration", "histogram", "ms", "rpc_server_duration_milliseconds"),
            ("baton.closer.passes", "counter", "", "baton_closer_passes_total"),
            ("baton.closer.judge.tokens", "counter", "{token}", "baton_closer_judge_tokens_total"),
            ("baton.outbox.depth", "gauge", "", "baton_outbox_depth"),
            ("baton.closer.budget.utilization", "gauge", "1", "baton_closer_budget_utilization_ratio"),
            ("process.memory.usage", "gauge", "By", "process_memory_usage_bytes"),
        ]
        for otel, kind, unit, name in cases:
            with self.subTest(otel=otel):
                self.assertEqual(metricscheck.prometheus_name(otel, kind, unit), name)

    def test_promql_metric_names(self):
        cases = [
            ('sum by (http_route) (rate(http_server_request_duration_seconds_count{http_route=~"/api/v1/.+"}[5m]))', {"http_server_request_duration_seconds_count"}),
            ("histogram_quantile(0.99, sum by (le) (rate(baton_closer_lag_seconds_bucket[$__rate_interval]))) / 1000", {"baton_closer_lag_seconds_bucket"}),
            ("baton:hook_errors:ratio_rate1h > (14.4 * 0.001) and baton:hook_errors:ratio_rate5m > 0", {"baton:hook_errors:ratio_rate1h", "baton:hook_errors:ratio_rate5m"}),
            ("(sum(increase(baton_closer_passes_total[30m])) or vector(0)) == 0  # a comment with words", {"baton_closer_passes_total"}),
            ('sum(rabbitmq_queue_messages{queue=~".+\\\\.dead-letter"}) > 0', {"rabbitmq_queue_messages"}),
            ("vector(0.01)", set()),
        ]
        for expr, names in cases:
            with self.subTest(expr=expr):
                self.assertEqual(metricscheck.metric_names(expr), names)

    def test_instruments_are_read_from_the_code_with_their_unit(self):
        source = '''
            meter.f64_histogram("rpc.server.duration")
                .with_unit("ms")
                .with_description("calls")
                .build();
            meter.u64_counter("baton.closer.passes").with_description("by result").build();
            meter.i64_gauge("baton.outbox.depth").build();
        '''
        self.assertEqual(metricscheck.emitted_by_code([source]), {
            "rpc.server.duration": ("histogram", "ms"),
            "baton.closer.passes": ("counter", ""),
            "baton.outbox.depth": ("gauge", ""),
        })

    def test_the_catalogue_is_held_to_the_code(self):
        entry = {"otel": "rpc.server.duration", "kind": "histogram", "unit": "ms", "prometheus": "rpc_server_duration_milliseconds"}
        cases = [
            ("emitted, same unit", "emitted", {"rpc.server.duration": ("histogram", "ms")}, 0),
            ("emitted, code in seconds", "emitted", {"rpc.server.duration": ("histogram", "s")}, 1),
            ("emitted, not in code", "emitted", {}, 1),
            ("planned, code still in seconds", "planned", {"rpc.server.duration": ("histogram", "s")}, 0),
            ("planned, now emitted", "planned", {"rpc.server.duration": ("histogram", "ms")}, 1),
        ]
        for name, status, code, count in cases:
            with self.subTest(name):
                problems, _ = metricscheck.check_catalogue([dict(entry, status=status)], code)
                self.assertEqual(len(problems), count, problems)
        wrong = dict(entry, status="planned", prometheus="rpc_server_duration_seconds")
        self.assertEqual(len(metricscheck.check_catalogue([wrong], {})[0]), 1)

    def test_unknown_metrics_in_queries_are_reported(self):
        known = {"baton_outbox_depth"}
        self.assertEqual(metricscheck.check_exprs("d", ["max(baton_outbox_depth)"], known), [])
        self.assertEqual(len(metricscheck.check_exprs("d", ["max(baton_outbox_dpeth)"], known)), 1)

    def test_labels_must_belong_to_the_queried_metrics(self):
        known = {"baton_outbox_depth", "rpc_server_duration_milliseconds_count"}
        labels = {"baton_outbox_depth": {"outbox"}, "rpc_server_duration_milliseconds_count": {"rpc_method"}}
        cases = [
            ("max by (outbox) (baton_outbox_depth)", 0),
            ('max by (outbox) (baton_outbox_depth{service_name="baton-registry"})', 0),
            ("max by (outbx) (baton_outbox_depth)", 1),
            ('sum by (rpc_method) (rate(rpc_server_duration_milliseconds_count{rpc_methd!="x"}[5m]))', 1),
            ('sum by (le) (rate(rpc_server_duration_milliseconds_count{k8s_pod_name!=""}[5m]))', 0),
        ]
        for expr, count in cases:
            with self.subTest(expr=expr):
                self.assertEqual(len(metricscheck.check_exprs("d", [expr], known, labels)), count)

    def test_runbook_anchors(self):
        self.assertEqual(metricscheck.anchors("# Baton runbook\n## HookApiErrorBudgetBurn\n"), {"baton-runbook", "hookapierrorbudgetburn"})


class BucketLabels(unittest.TestCase):
    BOUNDS = {"lag_seconds_bucket": [0.25, 900.0, 3600.0]}

    def problems(self, expr):
        return bucketcheck.check_le_matchers("t", expr, self.BOUNDS)

    def test_both_versions_label_forms(self):
        self.assertEqual(bucketcheck.prometheus2_label(3600.0), "3600")
        self.assertEqual(bucketcheck.prometheus3_label(3600.0), "3600.0")
        self.assertEqual(bucketcheck.prometheus2_label(0.25), "0.25")
        self.assertEqual(bucketcheck.prometheus3_label(0.25), "0.25")

    def test_a_selector_must_match_a_bucket_in_both_forms(self):
        cases = [
            ('sum(rate(lag_seconds_bucket{le="3600"}[5m]))', ["Prometheus 3"]),
            ('sum(rate(lag_seconds_bucket{le="3600.0"}[5m]))', ["Prometheus 2"]),
            ('sum(rate(lag_seconds_bucket{le=~"3600(\\\\.0)?"}[5m]))', []),
            ('sum(rate(lag_seconds_bucket{le="0.25"}[5m]))', []),
            ('sum(rate(lag_seconds_bucket{le="7200"}[5m]))', ["Prometheus 2", "Prometheus 3"]),
            ('sum(rate(lag_seconds_bucket{le="+Inf"}[5m]))', []),
            ('histogram_quantile(0.99, sum by (le) (rate(lag_seconds_bucket[5m])))', []),
        ]
        for expr, versions in cases:
            with self.subTest(expr=expr):
                found = self.problems(expr)
                self.assertEqual(len(found), len(versions), found)
                for version, problem in zip(versions, found):
                    self.assertIn(version, problem)

    def test_boundaries_are_read_from_the_code(self):
        consts = bucketcheck.constants("pub const LAG: &[f64] = &[\n    0.5, 3600.0,\n];")
        code = 'm.f64_histogram("baton.lag").with_unit("s").with_boundaries(buckets::LAG.to_vec()).build()'
        plain = 'm.f64_histogram("baton.other").with_unit("s").build()'
        found = bucketcheck.boundaries_by_instrument([code, plain], consts)
        self.assertEqual(found["baton.lag"], [0.5, 3600.0])
        self.assertEqual(found["baton.other"], bucketcheck.SDK_DEFAULT)


class DockerLayer(unittest.TestCase):
    def test_the_stand_in_lists_are_compared_with_the_workspace(self):
        wanted = {"manifests": {"a", "b"}, "lib": {"a"}, "bin": {"b"}, "script": {"a"}}
        self.assertEqual(dockercheck.compare(wanted, wanted), [])
        found = {"manifests": {"a"}, "lib": {"a", "b"}, "bin": {"b"}, "script": set()}
        self.assertEqual(dockercheck.compare(found, wanted), [
            "deps stage: b is missing from the manifests list",
            "deps stage: b is in the lib list but not in the workspace that way",
            "deps stage: a is missing from the script list",
        ])


class HealthcheckScript(unittest.TestCase):
    """deploy/healthcheck.sh against real sockets on this machine."""

    script = ROOT / "deploy/healthcheck.sh"

    def run_check(self, argv: list[str], env: dict[str, str]) -> int:
        with tempfile.NamedTemporaryFile("wb", delete=False) as cmdline:
            cmdline.write(b"\0".join(a.encode() for a in argv) + b"\0")
        try:
            full = {"PATH": os.environ["PATH"], "BATON_HEALTHCHECK_CMDLINE": cmdline.name, **env}
            return subprocess.run(["bash", str(self.script)], env=full, capture_output=True, timeout=10).returncode
        finally:
            os.unlink(cmdline.name)

    def serve_http(self, status: int):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                self.send_response(status if self.path == "/healthz" else 404)
                self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server.server_address[1]

    def free_port(self) -> int:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return probe.getsockname()[1]

    def test_the_gateway_is_healthy_only_when_healthz_answers_200(self):
        ok = self.serve_http(200)
        failing = self.serve_http(503)
        cases = [
            (["baton", "serve", "gateway", "--no-migrate"], f"0.0.0.0:{ok}", 0),
            (["baton", "serve", "all"], f"0.0.0.0:{ok}", 0),
            (["baton", "serve", "gateway"], f"0.0.0.0:{failing}", 1),
            (["baton", "serve", "gateway"], f"0.0.0.0:{self.free_port()}", 1),
        ]
        for argv, listen, code in cases:
            with self.subTest(argv=argv, listen=listen):
                self.assertEqual(self.run_check(argv, {"BATON_GATEWAY__LISTEN": listen}), code)

    def test_a_grpc_service_is_healthy_when_its_port_accepts(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        self.addCleanup(listener.close)
        port = listener.getsockname()[1]
        self.assertEqual(self.run_check(["baton", "serve", "triage"], {"BATON_TRIAGE__LISTEN": f"[::]:{port}"}), 0)
        closed = self.free_port()
        self.assertNotEqual(self.run_check(["baton", "serve", "triage"], {"BATON_TRIAGE__LISTEN": f"0.0.0.0:{closed}"}), 0)

    def test_one_shots_are_always_healthy(self):
        self.assertEqual(self.run_check(["baton", "migrate"], {}), 0)


if __name__ == "__main__":
    unittest.main()
