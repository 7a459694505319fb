//! The usage page's range, period keys and stacked charts against the dates and zones a user picks.

use super::*;

fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
    text.parse().expect("instant")
}

fn query(from: Option<&str>, to: Option<&str>, tz: Option<&str>) -> UsageQuery {
    UsageQuery {
        from: from.map(str::to_string),
        to: to.map(str::to_string),
        tz: tz.map(str::to_string),
        by: None,
    }
}

fn by(from: &str, to: &str, by: Option<&str>) -> UsageQuery {
    UsageQuery {
        by: by.map(str::to_string),
        ..query(Some(from), Some(to), Some("UTC"))
    }
}

#[test]
fn long_ranges_are_cut_by_week_or_month_and_each_period_keyed_as_the_service_keys_it() {
    let now = at("2026-12-01T12:00:00Z");
    let utc: Tz = "UTC".parse().expect("zone");
    type Expected<'a> = Result<(Period, &'a [&'a str]), &'a str>;
    let cases: [(&str, &str, Option<&str>, Expected<'_>); 7] = [
        (
            "2026-11-29",
            "2026-12-01",
            None,
            Ok((Period::Day, &["2026-11-29", "2026-11-30", "2026-12-01"])),
        ),
        // Sunday to Tuesday: two ISO weeks, keyed by their Mondays.
        (
            "2026-11-29",
            "2026-12-01",
            Some("week"),
            Ok((Period::Week, &["2026-11-23", "2026-11-30"])),
        ),
        (
            "2026-10-31",
            "2026-12-01",
            Some("month"),
            Ok((Period::Month, &["2026-10", "2026-11", "2026-12"])),
        ),
        // 93 days: by week unless asked.
        ("2026-08-31", "2026-12-01", None, Ok((Period::Week, &[]))),
        (
            "2026-08-31",
            "2026-12-01",
            Some("day"),
            Err("by week or month"),
        ),
        (
            "2025-10-27",
            "2026-12-01",
            Some("month"),
            Err("at most 400 days"),
        ),
        (
            "2026-11-01",
            "2026-12-01",
            Some("fortnight"),
            Err("by must be day, week or month"),
        ),
    ];
    for (from, to, period, expected) in cases {
        let outcome = range(&by(from, to, period), utc, now);
        match (outcome, expected) {
            (Ok(range), Ok((period, keys))) => {
                assert_eq!(range.period, period, "{from}..{to}");
                if !keys.is_empty() {
                    assert_eq!(periods(&range), keys, "{from}..{to}");
                }
            }
            (Err(error), Err(expected)) => {
                assert!(error.contains(expected), "{from}..{to}: {error}");
            }
            (outcome, expected) => panic!("{from}..{to}: {outcome:?}, expected {expected:?}"),
        }
    }
    let long = range(&by("2026-08-31", "2026-12-01", None), utc, now).expect("weeks");
    let weeks = periods(&long);
    assert_eq!(weeks.first().map(String::as_str), Some("2026-08-31"));
    assert_eq!(weeks.len(), 14);
}

#[test]
fn the_range_defaults_to_thirty_days_ending_today_in_the_zone() {
    let now = at("2026-12-01T23:30:00Z");
    let tokyo: Tz = "Asia/Tokyo".parse().expect("zone");
    let range = range(&query(None, None, None), tokyo, now).expect("default");
    assert_eq!(
        range.to.to_string(),
        "2026-12-02",
        "already tomorrow in Tokyo"
    );
    assert_eq!(range.from.to_string(), "2026-11-03");
    assert_eq!(periods(&range).len(), 30);
    let utc = super::range(&query(None, None, Some("UTC")), tokyo, now).expect("utc");
    assert_eq!(utc.to.to_string(), "2026-12-01");
    for (bad, expected) in [
        (
            query(Some("2026-12-02"), Some("2026-12-01"), None),
            "not be after",
        ),
        (
            query(Some("2025-01-01"), Some("2026-12-01"), None),
            "at most",
        ),
        (query(Some("yesterday"), None, None), "must be a date"),
        (query(None, None, Some("Mars/Olympus")), "not a time zone"),
    ] {
        let error = super::range(&bad, tokyo, now).expect_err("refused");
        assert!(error.contains(expected), "{error}");
    }
}

#[test]
fn days_stack_by_model_with_zeros_where_a_model_did_nothing() {
    let figures = |cost: f64| usage::Figures {
        cost_usd: cost,
        ..Default::default()
    };
    let group = |day: &str, models: &[(&str, f64)]| usage::UsageGroup {
        key: day.to_string(),
        figures: None,
        by_model: models
            .iter()
            .map(|(model, cost)| usage::ModelFigures {
                model: (*model).to_string(),
                figures: Some(figures(*cost)),
            })
            .collect(),
    };
    let days = vec![
        "2026-12-01".to_string(),
        "2026-12-02".to_string(),
        "2026-12-03".to_string(),
    ];
    let groups = [
        group("2026-12-01", &[("opus", 1.0), ("haiku", 0.5)]),
        group("2026-12-03", &[("opus", 2.0)]),
        group("2025-01-01", &[("opus", 9.0)]),
    ];
    let chart = stacked(&days, &groups, |figures| figures.cost_usd);
    assert_eq!(chart["labels"], json!(days));
    assert_eq!(
        chart["datasets"],
        json!([
            {"label": "haiku", "data": [0.5, 0.0, 0.0],
                "backgroundColor": "hsl(0.0, 62%, 45%)", "borderColor": "hsl(0.0, 62%, 45%)"},
            {"label": "opus", "data": [1.0, 0.0, 2.0],
                "backgroundColor": "hsl(137.5, 62%, 62%)", "borderColor": "hsl(137.5, 62%, 62%)"},
        ])
    );
}
