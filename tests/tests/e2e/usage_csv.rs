//! The usage reads as CSV through the real gateway: asked for with `Accept: text/csv`, the
//! same groups and sessions the JSON answer has, one row each; the sessions' next page in a
//! `Link` header; text a spreadsheet would run as a formula neutralised; JSON for everyone who
//! does not prefer CSV.

use std::collections::BTreeMap;

use serde_json::json;
use uuid::Uuid;

use baton_tests::{Answer, Baton, Client};

use crate::usage_upload::{BATCHES, NOW, tree_batch};

const CSV: &str = "text/csv";
const RANGE: &str = "from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z";

/// The CSV body's rows (header first).
fn table(answer: &Answer) -> Vec<Vec<String>> {
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let content_type = answer.headers["content-type"].to_str().expect("type");
    assert!(content_type.starts_with("text/csv"), "{content_type}");
    let text = answer.body.as_str().expect("a CSV body");
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|record| {
            record
                .expect("a CSV record")
                .iter()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|column| column == name)
        .unwrap_or_else(|| panic!("column {name} in {header:?}"))
}

async fn uploaded(client: &Client) {
    for id in ["s-1", "s-2", "s-3"] {
        let batch = tree_batch(id, &Uuid::new_v4().to_string());
        let answer = client.post(BATCHES, &batch).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
}

#[tokio::test]
async fn usage_and_sessions_answer_csv_to_a_caller_that_prefers_it() {
    let baton = Baton::start().await;
    let client = baton
        .client(&baton.create_tenant("usage-csv").await)
        .at(NOW);
    uploaded(&client).await;

    // Groups: the JSON groups, one row each, costs and tokens as JSON writes them.
    let path = format!("/api/v1/usage?groupBy=model&{RANGE}");
    let json_answer = client.get(&path).await;
    let rows = table(&client.get_accepting(&path, CSV).await);
    let header = &rows[0];
    assert_eq!(header[0], "model");
    let (cost, total) = (column(header, "costUsd"), column(header, "totalTokens"));
    let from_csv: BTreeMap<String, (String, String)> = rows[1..]
        .iter()
        .map(|row| (row[0].clone(), (row[cost].clone(), row[total].clone())))
        .collect();
    let from_json: BTreeMap<String, (String, String)> = json_answer.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|group| {
            let figures = &group["figures"];
            (
                group["key"].as_str().expect("key").to_string(),
                (
                    figures["costUsd"].to_string(),
                    figures["tokens"]["total"].to_string(),
                ),
            )
        })
        .collect();
    assert!(!from_json.is_empty());
    assert_eq!(from_csv, from_json);

    // Sessions: paged through Link headers to the same sessions the JSON listing has.
    let mut listed = Vec::new();
    let mut next = Some(format!("/api/v1/usage/sessions?{RANGE}&limit=2"));
    let mut pages = 0;
    while let Some(path) = next {
        pages += 1;
        let answer = client.get_accepting(&path, CSV).await;
        let rows = table(&answer);
        let header = &rows[0];
        let (id, slug) = (column(header, "sessionId"), column(header, "projectSlug"));
        for row in &rows[1..] {
            assert_eq!(row[slug], "'-home-me-repo", "a leading '-' opens as text");
            listed.push(row[id].clone());
        }
        next = answer.headers.get("link").map(|link| {
            let link = link.to_str().expect("link");
            assert!(link.ends_with("; rel=\"next\""), "{link}");
            link[1..link.find('>').expect(">")].to_string()
        });
    }
    assert_eq!(pages, 2, "2 + 1 sessions at limit 2");
    listed.sort();
    assert_eq!(listed, ["s-1", "s-2", "s-3"]);

    // JSON to every caller that does not prefer CSV; errors stay JSON.
    for accept in [
        "application/json",
        "*/*",
        "application/json, text/csv",
        "text/html",
    ] {
        let answer = client.get_accepting(&path, accept).await;
        assert_eq!(answer.status, 200, "{accept}");
        assert!(answer.body["groups"].is_array(), "{accept}: JSON");
    }
    let refused = client
        .get_accepting("/api/v1/usage?groupBy=fortnight", CSV)
        .await;
    assert_eq!(
        (refused.status, &refused.body["error"]),
        (400, &json!("invalid_input"))
    );
}
