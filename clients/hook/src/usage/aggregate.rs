//! Summing priced records into the report's groups: pure functions over a scanned corpus.

use std::collections::{BTreeMap, HashMap};

use baton_transcripts::pricing::Row;
use baton_transcripts::{
    Corpus, Harness, PriceTable, Priced, ServerTools, Session, Tokens, UsageRecord,
};
use chrono::{DateTime, NaiveDate, TimeZone};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;

use super::args::UsageArgs;

/// Tokens and price of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum {
    pub tokens: Tokens,
    /// Per-call server tools (web search, web fetch), beside the tokens.
    pub server_tools: ServerTools,
    pub priced: Priced,
    pub requests: u64,
}

impl Sum {
    pub fn add(&mut self, record: &UsageRecord, priced: Priced) {
        self.tokens += record.tokens;
        self.server_tools += record.server_tools;
        self.priced += priced;
        self.requests += 1;
    }

    pub fn merge(&mut self, other: &Sum) {
        self.tokens += other.tokens;
        self.server_tools += other.server_tools;
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
            let label = record.model.as_deref().unwrap_or(NO_MODEL);
            match self.models.get_mut(label) {
                Some(sum) => sum.add(record, priced),
                None => self
                    .models
                    .entry(label.to_string())
                    .or_default()
                    .add(record, priced),
            }
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

/// What a record without a model is reported under.
const NO_MODEL: &str = "(no model)";

/// The name a record's model is reported under.
pub fn model_label(record: &UsageRecord) -> String {
    record.model.clone().unwrap_or_else(|| NO_MODEL.to_string())
}

/// The records a report covers, each with its price, in time order.
pub struct Selection<'a> {
    /// Each record with its price and its date in the report's zone.
    pub priced: Vec<(&'a UsageRecord, Priced, NaiveDate)>,
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
        let mut dates = LocalDates::new(args.timezone);
        let mut rows: FxHashMap<(&str, NaiveDate), Option<&Row>> = FxHashMap::default();
        let mut priced: Vec<(&UsageRecord, Priced, NaiveDate)> =
            Vec::with_capacity(corpus.records.len());
        for record in &corpus.records {
            let day = dates.of(record.timestamp_ms);
            if args.since.is_some_and(|since| day < since)
                || args.until.is_some_and(|until| day > until)
            {
                continue;
            }
            if let Some(project) = &args.project {
                let in_project = sessions
                    .get(&(record.harness, record.session_id.as_str()))
                    .is_some_and(|session| &session.project_slug == project);
                if !in_project {
                    continue;
                }
            }
            // Rows are looked up once per model and UTC day, not per record.
            let row = match (record.model.as_deref(), utc_date(record.timestamp_ms)) {
                (Some(model), Some(utc_day)) => *rows
                    .entry((model, utc_day))
                    .or_insert_with(|| prices.row_for(model, utc_day)),
                _ => None,
            };
            let mut price = PriceTable::price_with(row, record);
            price += prices.price_calls(record);
            priced.push((record, price, day));
        }
        priced.sort_by_key(|(record, _, _)| record.timestamp_ms);
        Selection {
            priced,
            sessions,
            timezone: args.timezone,
        }
    }

    /// Everything selected.
    pub fn total(&self) -> Group {
        let mut group = Group::default();
        for (record, priced, _) in &self.priced {
            group.add(record, *priced);
        }
        group
    }

    /// Unpriced tokens by model.
    pub fn unpriced(&self) -> BTreeMap<String, u64> {
        let mut by_model = BTreeMap::new();
        for (record, priced, _) in &self.priced {
            if priced.unpriced_tokens > 0 {
                *by_model.entry(model_label(record)).or_insert(0) += priced.unpriced_tokens;
            }
        }
        by_model
    }

    /// Groups by local date.
    pub fn daily(&self) -> BTreeMap<NaiveDate, Group> {
        let mut days: BTreeMap<NaiveDate, Group> = BTreeMap::new();
        for (record, priced, day) in &self.priced {
            days.entry(*day).or_default().add(record, *priced);
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
        for (record, priced, _) in &self.priced {
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
        for (record, priced, _) in &self.priced {
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

/// The UTC date of `ms` (what prices are dated by).
fn utc_date(ms: i64) -> Option<NaiveDate> {
    DateTime::from_timestamp_millis(ms).map(|at| at.date_naive())
}

/// Local dates memoised per quarter hour: every zone's offset is a multiple of 15 minutes, so
/// all instants of one UTC quarter hour share a local date.
struct LocalDates {
    zone: Tz,
    memo: FxHashMap<i64, NaiveDate>,
}

impl LocalDates {
    fn new(zone: Tz) -> LocalDates {
        LocalDates {
            zone,
            memo: FxHashMap::default(),
        }
    }

    fn of(&mut self, ms: i64) -> NaiveDate {
        const QUARTER_HOUR_MS: i64 = 900_000;
        let zone = self.zone;
        *self
            .memo
            .entry(ms.div_euclid(QUARTER_HOUR_MS))
            .or_insert_with(|| local_date(ms, zone))
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
