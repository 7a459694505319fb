//! The console's one list of sessions, tried as a new user would: the conformance corpus (76
//! real sessions of two harnesses) backfilled by the real `baton-hook ingest` with no hook ever
//! installed, one of its sessions also opened by a hook, and one hook session with no usage.
//! Every session appears exactly once across the pages, the hook-reported ones with their run
//! and liveness, the others as "no hook" linking to a page that shows their agent tree at the
//! list's cost (in a real Chromium). Another tenant finds none of it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use baton_tests::Baton;
use baton_tests::hook::HookHome;

use crate::console::{WAIT, console_key, costs, http, session_cookie, signed_in};
use crate::usage_conformance::{lay_out_corpus, local};
use crate::usage_real::ingest;

/// One row of the list as the HTML has it.
#[derive(Debug, Clone)]
struct Listed {
    run_id: String,
    link: String,
    state: String,
    /// `data-cost-usd` of the row's cost (empty when none was uploaded).
    cost_usd: String,
}

fn unescape(text: &str) -> String {
    text.replace("&#38;", "&")
        .replace("&amp;", "&")
        .replace("&#x2F;", "/")
        .replace("&#47;", "/")
}

/// The value of `name="…"` in `tag`.
fn attribute(tag: &str, name: &str) -> String {
    let marker = format!("{name}=\"");
    tag.find(&marker)
        .map(|start| {
            let rest = &tag[start + marker.len()..];
            unescape(&rest[..rest.find('"').unwrap_or(rest.len())])
        })
        .unwrap_or_default()
}

/// Every row of one page (keyed `harness/session id`, in order) and its next link.
fn rows_of(html: &str) -> (Vec<(String, Listed)>, Option<String>) {
    let mut rows = Vec::new();
    for chunk in html.split("<tr data-run-id=").skip(1) {
        let row = &chunk[..chunk.find("</tr>").expect("row end")];
        let tag = format!("data-run-id={}", &row[..row.find('>').expect("tag end")]);
        let cells: Vec<&str> = row.split("<td").collect();
        let link_cell = cells.get(2).expect("session cell");
        let harness = cells.get(3).expect("harness cell");
        let harness = harness
            [harness.find('>').expect(">") + 1..harness.find("</td>").expect("</td>")]
            .to_string();
        let state_cell = cells.get(6).expect("liveness cell");
        let state = state_cell
            .split('>')
            .nth(2)
            .and_then(|text| text.split('<').next())
            .unwrap_or_default()
            .to_string();
        rows.push((
            format!("{harness}/{}", attribute(&tag, "data-session-id")),
            Listed {
                run_id: attribute(&tag, "data-run-id"),
                link: attribute(link_cell, "href"),
                state,
                cost_usd: attribute(row, "data-cost-usd"),
            },
        ));
    }
    let next = html
        .split("<a ")
        .find(|tag| tag.contains("rel=\"next\""))
        .map(|tag| attribute(tag, "href"));
    (rows, next)
}

#[tokio::test]
async fn sessions_known_from_hooks_transcripts_or_both_are_listed_once_each() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("one-list").await;
    let key = console_key(&baton, &tenant).await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    lay_out_corpus(&home.home);

    // What the machine holds, per the local report.
    let report = local(&home, &["session"]).await;
    let known: BTreeSet<String> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            format!(
                "{}/{}",
                row["harness"].as_str().expect("harness"),
                row["sessionId"].as_str().expect("sessionId")
            )
        })
        .collect();
    assert!(known.len() > 50, "more than one page: {}", known.len());
    let both = known.iter().next().expect("a session").clone();
    let (both_harness, both_id) = both.split_once('/').expect("key");
    let mut hook_runs = BTreeMap::new();
    for (harness, id) in [
        (both_harness, both_id),
        ("claude-code", "hook-only-session"),
    ] {
        let open = client
            .post(
                "/api/v1/agent-sessions/open",
                &json!({"agent": harness, "sessionId": id, "source": "startup"}),
            )
            .await;
        assert_eq!(open.status, 200, "{:?}", open.body);
        let run = open.body["sessionRunId"].as_str().expect("run").to_string();
        hook_runs.insert(format!("{harness}/{id}"), run);
    }
    let summary = ingest(&home).await;
    assert_eq!(summary["failures"], json!([]), "{summary}");

    let browser = signed_in(&baton, &key).await;
    let cookie = session_cookie(&browser).await;
    let page = |path: String| {
        let cookie = cookie.clone();
        let url = format!("{}{path}", baton.base_url);
        async move {
            let answer = http()
                .get(url)
                .header("cookie", cookie)
                .send()
                .await
                .expect("page");
            (answer.status().as_u16(), answer.text().await.expect("html"))
        }
    };

    let mut listed: Vec<(String, Listed)> = Vec::new();
    let mut next = Some("/console/sessions".to_string());
    let mut pages = 0;
    while let Some(path) = next {
        pages += 1;
        assert!(pages <= 5, "the list ends");
        let (status, html) = page(path).await;
        assert_eq!(status, 200, "{html}");
        let (rows, following) = rows_of(&html);
        listed.extend(rows);
        next = following;
    }
    assert!(pages >= 2, "more than one page");
    let keys: Vec<&String> = listed.iter().map(|(key, _)| key).collect();
    let distinct: BTreeSet<&String> = keys.iter().copied().collect();
    assert_eq!(keys.len(), distinct.len(), "no session twice: {keys:?}");
    for key in &known {
        assert!(distinct.contains(key), "{key} is listed");
    }
    let by_key: BTreeMap<String, Listed> = listed.into_iter().collect();
    for (key, run) in &hook_runs {
        let row = &by_key[key];
        assert_eq!(&row.run_id, run, "{key}: listed from registry");
        assert_eq!(row.link, format!("/console/sessions/{run}"));
        assert!(row.state.contains("live"), "{key}: {row:?}");
    }
    let transcript_only: Vec<(&String, &Listed)> = by_key
        .iter()
        .filter(|(key, _)| !hook_runs.contains_key(*key))
        .collect();
    assert_eq!(transcript_only.len() + hook_runs.len(), by_key.len());
    for (key, row) in &transcript_only {
        assert!(row.run_id.is_empty(), "{key}: no run");
        assert_eq!(row.state, "no hook", "{key}");
        assert!(
            row.link.starts_with("/console/transcripts/"),
            "{key}: {row:?}"
        );
    }

    // A transcript-only session's page shows its agent tree at the list's cost.
    let (key, row) = transcript_only
        .iter()
        .find(|(_, row)| !row.cost_usd.is_empty())
        .copied()
        .expect("a priced transcript-only session");
    browser
        .goto(&format!("{}{}", baton.base_url, row.link))
        .await;
    browser
        .wait_text("#session-state", WAIT, |text| text == "no hook")
        .await;
    let tree = browser.text("#agent-tree tbody").await.unwrap_or_default();
    assert!(tree.contains("main agent"), "{key}: {tree}");
    let list_cost: f64 = row.cost_usd.parse().expect("the list's cost");
    let page_cost = costs(&browser, "#session-cost .cost").await;
    assert_eq!(
        page_cost,
        [list_cost],
        "{key}: the page's total is the list's"
    );
    browser.screenshot("transcript-session").await;
    browser.close().await;

    // The whole list as one download: every listed session once, each saying what reported it.
    let (status, body) = page("/console/sessions/export".to_string()).await;
    assert_eq!(status, 200, "{body}");
    let records: Vec<Vec<String>> = csv::Reader::from_reader(body.as_bytes())
        .records()
        .map(|record| record.expect("record").iter().map(str::to_string).collect())
        .collect();
    let downloaded: BTreeMap<String, String> = records
        .iter()
        .map(|record| (format!("{}/{}", record[0], record[1]), record[4].clone()))
        .collect();
    assert_eq!(records.len(), by_key.len(), "one line per listed session");
    for (key, row) in &by_key {
        let expected = if row.run_id.is_empty() {
            "transcripts"
        } else {
            "hook"
        };
        assert_eq!(
            downloaded.get(key).map(String::as_str),
            Some(expected),
            "{key}"
        );
    }

    // The corpus's whole span on the usage page: past 92 days it is charted by week, and by
    // month when asked, each period table summing to the API's total for the same range.
    let daily = local(&home, &["daily"]).await;
    let dates: Vec<chrono::NaiveDate> = daily["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["date"].as_str().expect("date").parse().expect("a date"))
        .collect();
    let last = *dates.iter().max().expect("a day");
    let first = (*dates.iter().min().expect("a day")).max(last - chrono::Duration::days(399));
    assert!(
        (last - first).num_days() > 92,
        "the corpus spans more than 92 days"
    );
    let to = last + chrono::Duration::days(1);
    for (by, period) in [("", "week"), ("&by=month", "month")] {
        let (status, html) =
            page(format!("/console/usage?from={first}&to={last}&tz=UTC{by}")).await;
        assert_eq!(status, 200, "{html}");
        assert!(
            html.contains(&format!("Per {period}, stacked by model")),
            "{period}"
        );
        let api = client
            .get(&format!(
                "/api/v1/usage?groupBy={period}&timezone=UTC&from={first}T00:00:00Z&to={to}T00:00:00Z"
            ))
            .await;
        assert_eq!(api.status, 200, "{:?}", api.body);
        let table = &html[html.find("id=\"usage-days\"").expect("period table")..];
        let table = &table[..table.find("</table>").expect("table end")];
        let period_sum: f64 = table
            .split("data-cost-usd=\"")
            .skip(1)
            .map(|rest| {
                rest[..rest.find('"').expect("quote")]
                    .parse::<f64>()
                    .expect("cost")
            })
            .sum();
        let total = api.body["total"]["costUsd"].as_f64().expect("total");
        assert!(
            (period_sum - total).abs() < 1e-6,
            "{period}: {period_sum} vs {total}"
        );
        let groups = api.body["groups"].as_array().expect("groups").len();
        assert_eq!(
            table.matches("<tr><th scope=\"row\">").count(),
            groups,
            "{period}"
        );
    }

    // The transcript page of a session a hook reported is its run's page.
    let both_link = format!("/console/transcripts/{both_harness}/{both_id}");
    let answer = http()
        .get(format!("{}{both_link}", baton.base_url))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("redirect");
    assert_eq!(answer.status().as_u16(), 303);
    assert_eq!(
        answer.headers()["location"].to_str().expect("location"),
        format!("/console/sessions/{}", hook_runs[&both])
    );

    // Another tenant lists none of it and finds no transcript page.
    let other = baton.create_tenant("one-list-other").await;
    let other_key = console_key(&baton, &other).await;
    let other_browser = signed_in(&baton, &other_key).await;
    let other_cookie = session_cookie(&other_browser).await;
    other_browser.close().await;
    let html = http()
        .get(format!("{}/console/sessions", baton.base_url))
        .header("cookie", &other_cookie)
        .send()
        .await
        .expect("list")
        .text()
        .await
        .expect("html");
    assert!(rows_of(&html).0.is_empty(), "another tenant lists nothing");
    assert!(html.contains("No session has been reported yet"));
    let status = http()
        .get(format!("{}{}", baton.base_url, row.link))
        .header("cookie", &other_cookie)
        .send()
        .await
        .expect("page")
        .status();
    assert_eq!(status.as_u16(), 404);
}
