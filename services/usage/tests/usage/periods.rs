//! QueryUsage by week and by month: ISO weeks (keyed by their Monday) and calendar months cut
//! in the query's zone, from the rollups for whole buckets and the rows at unaligned edges,
//! summing exactly what the days sum.

use std::collections::BTreeMap;

use baton_proto::usage::v1 as proto;

use crate::*;

/// Output tokens per group key.
fn outputs(answer: &proto::QueryUsageResponse) -> BTreeMap<String, u64> {
    answer
        .groups
        .iter()
        .map(|group| {
            let output = group
                .figures
                .as_ref()
                .and_then(|figures| figures.tokens.as_ref())
                .map_or(0, |tokens| tokens.output);
            (group.key.clone(), output)
        })
        .collect()
}

#[tokio::test]
async fn weeks_and_months_are_cut_in_the_zone_and_sum_what_the_days_sum() {
    let (harness, tenant) = Harness::with_tenant().await;
    let request = session_usage(vec![
        // Saturday 31 January in UTC, already Sunday 1 February in Tokyo.
        lead("k1", "claude-opus-4-5", "2026-01-31T23:30:00Z", 1),
        // Sunday 1 February: still the week of Monday 26 January.
        lead("k2", "claude-opus-4-5", "2026-02-01T10:00:00Z", 10),
        // Monday 2 February: a new week.
        lead("k3", "claude-opus-4-5", "2026-02-02T01:00:00Z", 100),
        // Sunday 15 February: the week of Monday 9 February.
        lead("k4", "claude-opus-4-5", "2026-02-15T12:00:00Z", 1000),
    ]);
    harness.upload(tenant, NOW, request).await;
    let query = |group_by: &str, zone: &str, from: &str, to: &str| proto::QueryUsageRequest {
        from: ts(from),
        to: ts(to),
        group_by: group_by.to_string(),
        timezone: Some(zone.to_string()),
        split_by_model: false,
    };
    let read = |request| async { harness.query(tenant, request).await.expect("query") };
    /// `(groupBy, zone, from, to, output per key)`.
    type Case<'a> = (&'a str, &'a str, &'a str, &'a str, &'a [(&'a str, u64)]);
    let cases: [Case<'_>; 5] = [
        (
            "week",
            "UTC",
            "2026-01-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
            &[
                ("2026-01-26", 11),
                ("2026-02-02", 100),
                ("2026-02-09", 1000),
            ],
        ),
        (
            "week",
            "Asia/Tokyo",
            "2026-01-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
            &[
                ("2026-01-26", 11),
                ("2026-02-02", 100),
                ("2026-02-09", 1000),
            ],
        ),
        (
            "month",
            "UTC",
            "2026-01-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
            &[("2026-01", 1), ("2026-02", 1110)],
        ),
        (
            "month",
            "Asia/Tokyo",
            "2026-01-01T00:00:00Z",
            "2026-03-01T00:00:00Z",
            &[("2026-02", 1111)],
        ),
        // Unaligned edges: the rows inside the partial buckets still count, the rest not.
        (
            "week",
            "UTC",
            "2026-01-31T23:29:59Z",
            "2026-02-15T12:00:01Z",
            &[
                ("2026-01-26", 11),
                ("2026-02-02", 100),
                ("2026-02-09", 1000),
            ],
        ),
    ];
    for (group_by, zone, from, to, expected) in cases {
        let answer = read(query(group_by, zone, from, to)).await;
        assert_eq!(answer.group_by, group_by);
        let expected: BTreeMap<String, u64> = expected
            .iter()
            .map(|(key, output)| ((*key).to_string(), *output))
            .collect();
        assert_eq!(
            outputs(&answer),
            expected,
            "{group_by} in {zone} from {from}"
        );
        let days = read(query("day", zone, from, to)).await;
        assert_eq!(
            answer.total, days.total,
            "{group_by} in {zone}: the days' total"
        );
    }
}
