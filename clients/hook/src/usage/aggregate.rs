//! Summing priced records into the report's groups: pure functions over a scanned corpus.

use std::collections::{BTreeMap, HashMap};

use baton_transcripts::{Corpus, Harness, PriceTable, Priced, Session, Tokens, UsageRecord};
use chrono::{DateTime, NaiveDate, TimeZone};
use chrono_tz::Tz;

use super::args::UsageArgs;

/// Tokens and price of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum {
    pub tokens: Tokens,
    pub priced: Priced,
    pub requests: u64,
}

impl Sum {
    pub fn add(&mut self, record: &UsageRecord, priced: Priced) {
        self.tokens += record.tokens;
        self.priced += priced;
        self.requests += 1;
    }

    pub fn merge(&mut self, other: &Sum) {
        self.tokens += other.tokens;
        self.priced += other.priced;
        self.requests += other.requests;
    }
}

/// A group's total and its split by model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub total: Sum,
    pub models: BTreeMap<String, Sum>,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

impl Group {
    fn add(&mut self, record: &UsageRecord, priced: Priced) {
        self.total.add(record, priced);
        // `<synthetic>` lines are the client's own messages, not model requests: they cost an
        // explicit zero and are left out of the model split when they carry no tokens.
        if !(record.is_synthetic() && record.tokens.total() == 0) {
            self.models
                .entry(model_label(record))
                .or_default()
                .add(record, priced);
        }
        self.first_ms = Some(
            self.first_ms
                .map_or(record.timestamp_ms, |f| f.min(record.timestamp_ms)),
        );
        self.last_ms = Some(
            self.last_ms
                .map_or(record.timestamp_ms, |l| l.max(record.timestamp_ms)),
        );
    }
}

/// The name a record's model is reported under.
pub fn model_label(record: &UsageRecord) -> String {
    record
        .model
        .clone()
        .unwrap_or_else(|| "(no model)".to_string())
}

/// The records a report covers, each with its price, in time order.
pub struct Selection<'a> {
    pub priced: Vec<(&'a UsageRecord, Priced)>,
    pub sessions: HashMap<(Harness, &'a str), &'a Session>,
    pub timezone: Tz,
}

impl<'a> Selection<'a> {
    /// Applies `--since`, `--until` (dates in the report's zone) and `--project`.
    pub fn new(corpus: &'a Corpus, prices: &PriceTable, args: &UsageArgs) -> Selection<'a> {
        let sessions: HashMap<(Harness, &str), &Session> = corpus
            .sessions
            .iter()
            .map(|session| ((session.harness, session.session_id.as_str()), session))
            .collect();
        let mut priced: Vec<(&UsageRecord, Priced)> = corpus
            .records
            .iter()
            .filter(|record| {
                let day = local_date(record.timestamp_ms, args.timezone);
                args.since.is_none_or(|since| day >= since)
                    && args.until.is_none_or(|until| day <= until)
            })
            .filter(|record| match &args.project {
                None => true,
                Some(project) => sessions
                    .get(&(record.harness, record.session_id.as_str()))
                    .is_some_and(|session| &session.project_slug == project),
            })
            .map(|record| (record, prices.price(record)))
            .collect();
        priced.sort_by_key(|(record, _)| record.timestamp_ms);
        Selection {
            priced,
            sessions,
            timezone: args.timezone,
        }
    }

    /// Everything selected.
    pub fn total(&self) -> Group {
        let mut group = Group::default();
        for (record, priced) in &self.priced {
            group.add(record, *priced);
        }
        group
    }

    /// Unpriced tokens by model.
    pub fn unpriced(&self) -> BTreeMap<String, u64> {
        let mut by_model = BTreeMap::new();
        for (record, priced) in &self.priced {
            if priced.unpriced_tokens > 0 {
                *by_model.entry(model_label(record)).or_insert(0) += priced.unpriced_tokens;
            }
        }
        by_model
    }

    /// Groups by local date.
    pub fn daily(&self) -> BTreeMap<NaiveDate, Group> {
        let mut days: BTreeMap<NaiveDate, Group> = BTreeMap::new();
        for (record, priced) in &self.priced {
            days.entry(local_date(record.timestamp_ms, self.timezone))
                .or_default()
                .add(record, *priced);
        }
        days
    }

    /// Groups by model.
    pub fn models(&self) -> BTreeMap<String, Sum> {
        self.total().models
    }

    /// Groups by session, in order of last activity.
    pub fn sessions(&self) -> Vec<((Harness, String), Group)> {
        let mut by_session: BTreeMap<(Harness, String), Group> = BTreeMap::new();
        for (record, priced) in &self.priced {
            by_session
                .entry((record.harness, record.session_id.clone()))
                .or_default()
                .add(record, *priced);
        }
        let mut sessions: Vec<_> = by_session.into_iter().collect();
        sessions.sort_by_key(|(key, group)| (group.last_ms, key.clone()));
        sessions
    }

    /// ccusage's 5-hour billing blocks: a block starts at the hour (UTC) of its first request
    /// and ends five hours later; a request more than five hours after the block's start, or
    /// after the previous request, starts the next block.
    pub fn blocks(&self) -> Vec<(i64, Group)> {
        const HOUR_MS: i64 = 3_600_000;
        const BLOCK_MS: i64 = 5 * HOUR_MS;
        let mut blocks: Vec<(i64, Group)> = Vec::new();
        for (record, priced) in &self.priced {
            let at = record.timestamp_ms;
            let starts_new = match blocks.last() {
                None => true,
                Some((start, group)) => {
                    at - start > BLOCK_MS || group.last_ms.is_some_and(|last| at - last > BLOCK_MS)
                }
            };
            if starts_new {
                blocks.push((at.div_euclid(HOUR_MS) * HOUR_MS, Group::default()));
            }
            if let Some((_, group)) = blocks.last_mut() {
                group.add(record, *priced);
            }
        }
        blocks
    }
}

/// The calendar date of `ms` in `zone`.
pub fn local_date(ms: i64, zone: Tz) -> NaiveDate {
    let utc = DateTime::from_timestamp_millis(ms).unwrap_or_default();
    zone.from_utc_datetime(&utc.naive_utc()).date_naive()
}

/// RFC 3339 in `zone` (with its offset).
pub fn local_time(ms: i64, zone: Tz) -> String {
    let utc = DateTime::from_timestamp_millis(ms).unwrap_or_default();
    zone.from_utc_datetime(&utc.naive_utc())
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
