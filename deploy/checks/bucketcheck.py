"""Every `le` matcher in a dashboard or rule selects a bucket the code emits, as Prometheus 2
and as Prometheus 3 store it.

Prometheus 2 keeps a classic histogram's `le` as the exporter wrote it (`le="3600"`); Prometheus
3 normalises it to a float (`le="3600.0"`; `0.25` stays `0.25`). A selector written for one
silently selects nothing on the other, and a burn-rate rule built on it never fires (issue 29).

The boundaries come from the code: an instrument's `with_boundaries(buckets::NAME...)` and the
constant `NAME` in `services/kit/src/telemetry/buckets.rs`; a histogram without explicit
boundaries has the SDK's defaults. `+Inf` is the same in both versions.
"""

from __future__ import annotations

import re

# The OpenTelemetry SDK's default explicit-bucket boundaries.
SDK_DEFAULT = [0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0, 10000.0]

CONSTANT = re.compile(r"pub const (?P<name>[A-Z_]+): &\[f64\] = &\[(?P<values>[^\]]*)\];")
HISTOGRAM = re.compile(r"f64_histogram\(\s*\"(?P<name>[^\"]+)\"\s*\)(?P<chain>.*?)\.build\(\)", re.S)
BOUNDARIES = re.compile(r"with_boundaries\(\s*buckets::(?P<constant>[A-Z_]+)")
SELECTOR = re.compile(r"(?P<metric>[a-zA-Z_:][a-zA-Z0-9_:]*_bucket)\s*\{(?P<matchers>[^{}]*)\}")
LE_MATCHER = re.compile(r"\ble\s*(?P<op>=~|!~|!=|=)\s*\"(?P<value>(?:\\.|[^\"\\])*)\"")


def constants(buckets_rs: str) -> dict[str, list[float]]:
    """`NAME -> boundaries` of every `pub const NAME: &[f64]` in buckets.rs."""
    found = {}
    for match in CONSTANT.finditer(buckets_rs):
        values = [v.strip().replace("_", "") for v in match["values"].split(",") if v.strip()]
        found[match["name"]] = [float(v) for v in values]
    return found


def boundaries_by_instrument(sources: list[str], consts: dict[str, list[float]]) -> dict[str, list[float]]:
    """OTel histogram name -> its boundaries, for every f64 histogram built in `sources`."""
    found = {}
    for text in sources:
        for match in HISTOGRAM.finditer(text):
            named = BOUNDARIES.search(match["chain"])
            found[match["name"]] = consts[named["constant"]] if named else SDK_DEFAULT
    return found


def prometheus2_label(bound: float) -> str:
    """`le` as the collector's exporter writes it and Prometheus 2 stores it (Go's shortest
    `%g`): `3600`, `0.25`."""
    text = repr(float(bound))
    assert "e" not in text, f"boundary {bound} needs exponent formatting; extend this check"
    return text[:-2] if text.endswith(".0") else text


def prometheus3_label(bound: float) -> str:
    """`le` as Prometheus 3 stores it (normalised float): `3600.0`, `0.25`."""
    text = repr(float(bound))
    assert "e" not in text, f"boundary {bound} needs exponent formatting; extend this check"
    return text


def matches(op: str, pattern: str, value: str) -> bool:
    """PromQL label matching (regexes are anchored)."""
    if op == "=":
        return value == pattern
    if op == "!=":
        return value != pattern
    # PromQL strings unescape `\\` to `\` before the regex sees them.
    regex = pattern.encode().decode("unicode_escape")
    hit = re.fullmatch(regex, value) is not None
    return hit if op == "=~" else not hit


def check_le_matchers(where: str, expr: str, bounds_of_series: dict[str, list[float]]) -> list[str]:
    """Problems: an `le` matcher on `<metric>_bucket` that selects none of that metric's buckets
    in the Prometheus 2 form, or none in the Prometheus 3 form."""
    problems = []
    text = re.sub(r"#[^\n]*", "", expr)
    for selector in SELECTOR.finditer(text):
        metric = selector["metric"]
        for le in LE_MATCHER.finditer(selector["matchers"]):
            bounds = bounds_of_series.get(metric)
            if bounds is None:
                problems.append(f"{where}: {metric} has no known bucket boundaries in the code")
                continue
            for version, form in (("Prometheus 2", prometheus2_label), ("Prometheus 3", prometheus3_label)):
                labels = [form(b) for b in bounds] + ["+Inf"]
                if not any(matches(le["op"], le["value"], label) for label in labels):
                    problems.append(
                        f"{where}: {metric}{{le{le['op']}\"{le['value']}\"}} selects no bucket as "
                        f"{version} stores them ({', '.join(labels[:6])}, ...)"
                    )
    return problems
