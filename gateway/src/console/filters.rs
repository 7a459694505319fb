//! The session list's filters, from the query string a GET form sends: empty fields mean "any",
//! everything else is validated, and dates are days in the viewer's zone.

use chrono::{DateTime, Days, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Deserialize;

/// The query string as the form sends it (every field may be present and empty).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFilters {
    pub project: Option<String>,
    pub harness: Option<String>,
    pub liveness: Option<String>,
    pub member: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cursor: Option<String>,
}

/// Validated filters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Filters {
    pub project: Option<String>,
    pub harness: Option<String>,
    pub liveness: Option<String>,
    /// A member's sessions, or `unattributed`: those no member reported.
    pub member: Option<String>,
    /// First day shown, and last day shown (inclusive), in the viewer's zone.
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    pub cursor: Option<String>,
}

/// Longest page cursor accepted: the session list's holds one cursor per source (registry's
/// 52 characters, usage's encoded key of up to a few hundred).
const MAX_CURSOR: usize = 1024;

pub const HARNESSES: [&str; 5] = ["claude-code", "codex", "copilot", "cursor", "gemini"];
pub const LIVENESS: [&str; 4] = ["live", "idle", "disconnected", "closed"];

fn present(value: Option<&String>) -> Option<&str> {
    value
        .map(|text| text.trim())
        .filter(|text| !text.is_empty())
}

fn date(name: &str, value: Option<&String>) -> Result<Option<NaiveDate>, String> {
    present(value)
        .map(|text| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map_err(|_| format!("{name} must be a date like 2026-12-01"))
        })
        .transpose()
}

/// Validates what the form sent.
pub fn parse(raw: &RawFilters) -> Result<Filters, String> {
    let member = present(raw.member.as_ref())
        .map(|text| {
            if text == baton_kit::member::UNATTRIBUTED {
                Ok(text.to_string())
            } else {
                baton_kit::member::member(text).map_err(|error| error.detail)
            }
        })
        .transpose()?;
    let project = present(raw.project.as_ref())
        .map(|text| {
            if text.chars().count() > 256 || text.chars().any(char::is_control) {
                Err("project must be at most 256 characters, without control characters")
            } else {
                Ok(text.to_string())
            }
        })
        .transpose()?;
    let one_of = |name: &str, value: Option<&String>, allowed: &[&str]| {
        present(value)
            .map(|text| {
                allowed
                    .iter()
                    .find(|candidate| **candidate == text)
                    .map(|found| (*found).to_string())
                    .ok_or_else(|| format!("{name} must be one of {}", allowed.join(", ")))
            })
            .transpose()
    };
    let harness = one_of("harness", raw.harness.as_ref(), &HARNESSES)?;
    let liveness = one_of("liveness", raw.liveness.as_ref(), &LIVENESS)?;
    let from = date("from", raw.from.as_ref())?;
    let to = date("to", raw.to.as_ref())?;
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err("from must not be after to".to_string());
    }
    let cursor = present(raw.cursor.as_ref())
        .map(|text| {
            if text.len() > MAX_CURSOR || !text.bytes().all(|byte| byte.is_ascii_graphic()) {
                Err("that page link is damaged: start again from the first page".to_string())
            } else {
                Ok(text.to_string())
            }
        })
        .transpose()?;
    Ok(Filters {
        project,
        harness,
        liveness,
        member,
        from,
        to,
        cursor,
    })
}

/// Local midnight at the start of `day`, as an instant (the earliest instant of the day when
/// midnight does not exist, as across some DST changes).
pub fn start_of(day: NaiveDate, zone: Tz) -> DateTime<Utc> {
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    match zone.from_local_datetime(&midnight) {
        chrono::LocalResult::Single(local) | chrono::LocalResult::Ambiguous(local, _) => {
            local.with_timezone(&Utc)
        }
        chrono::LocalResult::None => zone
            .from_local_datetime(&(midnight + chrono::Duration::hours(1)))
            .earliest()
            .map_or_else(|| midnight.and_utc(), |local| local.with_timezone(&Utc)),
    }
}

/// The half-open instant range `[from day's start, the day after `to`'s start)`.
pub fn range(
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    zone: Tz,
) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
    (
        from.map(|day| start_of(day, zone)),
        to.and_then(|day| day.checked_add_days(Days::new(1)))
            .map(|day| start_of(day, zone)),
    )
}

/// The query string that keeps these filters (for the next page's link), with `cursor`.
pub fn query_string(filters: &Filters, cursor: Option<&str>) -> String {
    let mut pairs = url::form_urlencoded::Serializer::new(String::new());
    let mut put = |key: &str, value: Option<&str>| {
        if let Some(value) = value {
            pairs.append_pair(key, value);
        }
    };
    put("project", filters.project.as_deref());
    put("harness", filters.harness.as_deref());
    put("liveness", filters.liveness.as_deref());
    put("member", filters.member.as_deref());
    let from = filters.from.map(|day| day.to_string());
    let to = filters.to.map(|day| day.to_string());
    put("from", from.as_deref());
    put("to", to.as_deref());
    put("cursor", cursor);
    pairs.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> RawFilters {
        let get = |key: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| (*value).to_string())
        };
        RawFilters {
            project: get("project"),
            harness: get("harness"),
            liveness: get("liveness"),
            member: get("member"),
            from: get("from"),
            to: get("to"),
            cursor: get("cursor"),
        }
    }

    #[test]
    fn empty_fields_mean_any_and_the_rest_is_validated() {
        let any = parse(&raw(&[("project", " "), ("harness", ""), ("liveness", "")]))
            .expect("empty is any");
        assert_eq!(any, Filters::default());
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let table: [Case<'_>; 11] = [
            (&[("harness", "codex"), ("liveness", "disconnected")], None),
            (&[("harness", "vim")], Some("harness must be one of")),
            (&[("liveness", "dead")], Some("liveness must be one of")),
            (&[("from", "2026-13-01")], Some("from must be a date")),
            (
                &[("from", "2026-12-02"), ("to", "2026-12-01")],
                Some("not be after"),
            ),
            (&[("project", "a\u{7}b")], Some("control characters")),
            (&[("cursor", "a b")], Some("damaged")),
            (&[("member", "al ice")], Some("member must be")),
            (&[("member", "unattributed")], None),
            (&[("member", "alice@example.com")], None),
            (&[("from", "2026-12-01"), ("to", "2026-12-01")], None),
        ];
        for (pairs, error) in table {
            match (parse(&raw(pairs)), error) {
                (Ok(_), None) => {}
                (Err(message), Some(expected)) => {
                    assert!(message.contains(expected), "{pairs:?}: {message}");
                }
                (result, expected) => panic!("{pairs:?}: {result:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn days_are_the_viewers_and_to_is_inclusive() {
        let berlin: Tz = "Europe/Berlin".parse().expect("zone");
        let day = |text: &str| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok();
        let (from, to) = range(day("2026-12-01"), day("2026-12-01"), berlin);
        assert_eq!(
            from.map(|at| at.to_rfc3339()),
            Some("2026-11-30T23:00:00+00:00".into())
        );
        assert_eq!(
            to.map(|at| at.to_rfc3339()),
            Some("2026-12-01T23:00:00+00:00".into())
        );
        // Midnight does not exist in Santiago on its spring-forward day: the day starts at 01:00.
        let santiago: Tz = "America/Santiago".parse().expect("zone");
        let start = start_of(day("2026-09-06").expect("day"), santiago);
        assert_eq!(start.to_rfc3339(), "2026-09-06T04:00:00+00:00");
    }

    #[test]
    fn the_next_page_link_keeps_the_filters() {
        let filters = parse(&raw(&[("project", "my app"), ("harness", "codex")])).expect("ok");
        assert_eq!(
            query_string(&filters, Some("123.abc")),
            "project=my+app&harness=codex&cursor=123.abc"
        );
    }
}
