"""Every dashboard query, alert rule and autoscaling metric names a metric that exists.

"Exists" means listed in deploy/observability/metrics.yaml, and that catalogue is itself held
to the code: each `emitted` entry is found in the Rust sources (services/, gateway/) as an
instrument name with the same unit, and its Prometheus name is the one the collector's
prometheus exporter derives from the OTel name, kind and unit (`prometheus_name`). `planned`
entries (issue 13's telemetry work) are reported until the code emits them and fail the check
once it does, so the catalogue is corrected in the same change. `external` entries come from
RabbitMQ's exporter.

Labels too: every label a query matches on or groups by is one the catalogue lists for the
metrics in that query, or one every series carries (the resource labels the collector adds,
`le` on buckets). A misspelt label selects nothing and a panel stays silently empty.

Buckets too (bucketcheck.py): every `le` matcher selects one of the code's boundaries both as
Prometheus 2 stores them (`le="3600"`) and as Prometheus 3 does (`le="3600.0"`).

Also: every alert has a severity and a runbook_url whose anchor is a heading of RUNBOOK.md.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

import yaml

import bucketcheck

INSTRUMENT = re.compile(
    r"\.\s*(?P<kind>[uif]64_(?:counter|histogram|gauge|up_down_counter|observable_\w+))"
    r"\(\s*\"(?P<name>[^\"]+)\"\s*\)(?P<chain>(?:\s*\.\s*with_\w+\([^()]*\))*)"
)
UNIT = re.compile(r"with_unit\(\s*\"([^\"]*)\"\s*\)")
KIND_OF = {"counter": "counter", "histogram": "histogram", "gauge": "gauge", "up_down_counter": "gauge"}
UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "By": "bytes", "%": "percent"}
PROMQL_WORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
    "bool", "offset", "inf", "nan", "atan2",
}


def prometheus_name(otel: str, kind: str, unit: str) -> str:
    """The collector's default translation (UnderscoreEscapingWithSuffixes) of one metric."""
    name = re.sub(r"[^a-zA-Z0-9_:]", "_", otel)
    unit = re.sub(r"\{[^}]*\}", "", unit or "")
    if unit == "1":
        word = "ratio" if kind == "gauge" else ""
    else:
        word = UNIT_WORDS.get(unit, re.sub(r"[^a-zA-Z0-9_]", "_", unit))
    if word and not name.endswith("_" + word):
        name += "_" + word
    if kind == "counter" and not name.endswith("_total"):
        name += "_total"
    return name


def emitted_by_code(sources: list[str]) -> dict[str, tuple[str, str]]:
    """OTel instrument name -> (kind, unit) for every instrument built in `sources`."""
    found = {}
    for text in sources:
        for match in INSTRUMENT.finditer(text):
            raw = match["kind"].split("_", 1)[1]
            kind = "gauge" if raw.startswith("observable_gauge") else KIND_OF.get(raw, raw)
            unit = UNIT.search(match["chain"])
            found[match["name"]] = (kind, unit[1] if unit else "")
    return found


def metric_names(expr: str) -> set[str]:
    """The metric (or recorded series) names a PromQL expression reads."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    text = re.sub(r"#[^\n]*", "", text)
    text = re.sub(r"\{[^{}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\$\w+", "", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", text):
        if match[2] is None and match[1] not in PROMQL_WORDS:
            names.add(match[1])
    return names


# Labels the collector puts on every series (resource_to_telemetry_conversion), Prometheus'
# own target labels, and the bucket bound.
COMMON_LABELS = {
    "service_name", "service_namespace", "service_version", "service_instance_id",
    "k8s_pod_name", "k8s_namespace_name", "job", "instance", "le",
}


def label_names(expr: str) -> set[str]:
    """Labels an expression matches on (`{label=...}`) or groups by (`by (...)`, `without`)."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    text = re.sub(r"#[^\n]*", "", text)
    names = set()
    for matchers in re.findall(r"\{([^{}]*)\}", text):
        names.update(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", matchers))
    for grouping in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", text):
        names.update(name.strip() for name in grouping.split(",") if name.strip())
    return names


def series_of(entry: dict) -> set[str]:
    name = entry["prometheus"]
    if entry["kind"] == "histogram":
        return {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return {name}


def check_catalogue(catalogue: list[dict], code: dict[str, tuple[str, str]]) -> tuple[list, list]:
    problems, notes = [], []
    for entry in catalogue:
        if entry["status"] == "external":
            continue
        otel, kind, unit = entry["otel"], entry["kind"], entry.get("unit", "")
        derived = prometheus_name(otel, kind, unit)
        if derived != entry["prometheus"]:
            problems.append(f"{otel}: the collector names it {derived}, metrics.yaml says {entry['prometheus']}")
        in_code = code.get(otel)
        if entry["status"] == "emitted":
            if in_code is None:
                problems.append(f"{otel}: marked emitted but no instrument in the code has this name")
            elif in_code != (kind, unit):
                problems.append(f"{otel}: the code builds a {in_code[0]} in {in_code[1]!r}, metrics.yaml says a {kind} in {unit!r}")
        elif entry["status"] == "planned":
            if in_code == (kind, unit):
                problems.append(f"{otel}: the code now emits it; mark it `status: emitted` in metrics.yaml")
            elif in_code:
                notes.append(f"{otel}: planned as a {kind} in {unit!r}, the code has a {in_code[0]} in {in_code[1]!r}")
            else:
                notes.append(f"{otel}: planned, not emitted yet")
        else:
            problems.append(f"{otel}: unknown status {entry['status']}")
    catalogued = {entry.get("otel") for entry in catalogue}
    for otel in sorted(set(code) - catalogued):
        notes.append(f"{otel}: emitted by the code but not in metrics.yaml")
    return problems, notes


def check_exprs(
    where: str, exprs: list[str], known: set[str], labels: dict[str, set[str]] | None = None
) -> list[str]:
    """Unknown metrics in `exprs`; with `labels` (series -> its labels), unknown labels too.
    Expressions over recorded series (names with a colon) are not label-checked."""
    problems = []
    for expr in exprs:
        names = metric_names(expr)
        if not names and "vector(" not in expr:
            problems.append(f"{where}: no metric found in {expr!r}")
        for name in sorted(names - known):
            problems.append(f"{where}: {name} is not a known metric ({expr[:80]}...)")
        if labels is not None and names and not any(":" in name for name in names):
            allowed = COMMON_LABELS.union(*(labels.get(name, set()) for name in names))
            for label in sorted(label_names(expr) - allowed):
                problems.append(f"{where}: label {label} is not on {', '.join(sorted(names))}")
    return problems


def dashboard_exprs(board: dict) -> list[str]:
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    for variable in board.get("templating", {}).get("list", []):
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
        exprs.append(inner[1] if inner else query)
    return exprs


def anchors(markdown: str) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    result = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        result.add(slug)
    return result


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1])
    obs = root / "deploy/observability"
    catalogue = yaml.safe_load((obs / "metrics.yaml").read_text())["metrics"]
    sources = [p.read_text() for d in ("services", "gateway") for p in (root / d).rglob("src/**/*.rs")]
    problems, notes = check_catalogue(catalogue, emitted_by_code(sources))
    rules = yaml.safe_load((obs / "alerts/baton.rules.yaml").read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    known = set().union(*(series_of(e) for e in catalogue)) | recorded
    labels = {series: set(e.get("labels", [])) for e in catalogue for series in series_of(e)}
    buckets_rs = (root / "services/kit/src/telemetry/buckets.rs").read_text()
    histograms = bucketcheck.boundaries_by_instrument(sources, bucketcheck.constants(buckets_rs))
    bounds = {
        f"{e['prometheus']}_bucket": histograms[e["otel"]]
        for e in catalogue
        if e["kind"] == "histogram" and e["otel"] in histograms
    }
    boards = sorted((obs / "dashboards").glob("*.json"))
    if not boards:
        problems.append("no dashboards found")
    queries = 0
    for path in boards:
        exprs = dashboard_exprs(json.loads(path.read_text()))
        queries += len(exprs)
        problems += check_exprs(f"dashboard {path.name}", exprs, known, labels)
        for expr in exprs:
            problems += bucketcheck.check_le_matchers(f"dashboard {path.name}", expr, bounds)
    runbook = anchors((obs / "RUNBOOK.md").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert") or rule.get("record")
            queries += 1
            problems += check_exprs(f"rule {name}", [rule["expr"]], known, labels)
            problems += bucketcheck.check_le_matchers(f"rule {name}", rule["expr"], bounds)
            if "alert" in rule:
                url = rule.get("annotations", {}).get("runbook_url", "")
                if url.rsplit("#", 1)[-1] not in runbook:
                    problems.append(f"alert {name}: runbook_url {url!r} has no matching RUNBOOK.md heading")
                if rule.get("labels", {}).get("severity") not in ("page", "ticket"):
                    problems.append(f"alert {name}: severity must be page or ticket")
    adapter = yaml.safe_load((obs / "prometheus-adapter.yaml").read_text())
    for kind in ("rules", "externalRules"):
        for rule in adapter.get(kind, []):
            queries += 1
            problems += check_exprs(f"adapter {rule['name']['as']}", [rule["seriesQuery"]], known, labels)
    for note in notes:
        print(f"[metrics] note: {note}")
    for problem in problems:
        print(f"[metrics] {problem}", file=sys.stderr)
    print(f"[metrics] {len(catalogue)} catalogued metrics, {queries} queries checked; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
