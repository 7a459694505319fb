//! The console in a real headless Chromium against the real stack: sign-in takes console keys
//! only; a session the real `baton-hook` opens appears on the fleet live and turns
//! disconnected when its client is killed; the session page shows the fixture transcript's
//! agent tree at the API's cost; Undo reopens a closer resolve; another tenant's session is not
//! found. Each page's screenshot is saved (`target/console-screenshots/`).

use std::time::Duration;

use serde_json::{Value, json};

use baton_tests::browser::Browser;
use baton_tests::hook::HookHome;
use baton_tests::{Baton, Tenant, UNLIMITED};

use crate::closer::{commitment_status, finish, open_briefed, open_briefed_on_done, settled_pass};
use crate::hook_liveness::{kill_client, sidecar_home, stand_in, start};
use crate::usage_hook::lay_out;
use crate::usage_real::ingest;

/// Polling pages and pulses every 100 ms would trip the default rate limit.
const ZONE: &str = "Asia/Tokyo";
pub(crate) const WAIT: Duration = Duration::from_secs(20);
/// The fixture session with subagents (fixtures/claude-code/transcripts/spotter).
const FIXTURE_SESSION: &str = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";

pub(crate) async fn console_key(baton: &Baton, tenant: &Tenant) -> String {
    let output = baton
        .cli(
            &[
                "key",
                "create",
                "--tenant",
                &tenant.tenant_id,
                "--scope",
                "console",
            ],
            &[],
        )
        .await;
    assert!(output.status.success(), "{output:?}");
    let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(line["scope"], "console");
    assert_eq!(line["tenantId"], tenant.tenant_id.as_str());
    line["apiKey"].as_str().expect("key").to_string()
}

async fn sign_in(browser: &Browser, baton: &Baton, key: &str) {
    browser
        .goto(&format!("{}/console/sign-in", baton.base_url))
        .await;
    browser.fill_and_submit("#key", key).await;
}

pub(crate) async fn signed_in(baton: &Baton, key: &str) -> Browser {
    let browser = Browser::start(ZONE).await;
    sign_in(&browser, baton, key).await;
    browser.wait_text("h1", WAIT, |text| text == "Fleet").await;
    browser
}

/// The browser's session cookie, for requests made beside it.
pub(crate) async fn session_cookie(browser: &Browser) -> String {
    let cookie = browser
        .client
        .get_named_cookie("baton_console")
        .await
        .expect("session cookie");
    format!("baton_console={}", cookie.value())
}

pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

#[tokio::test]
async fn only_a_console_key_signs_in_and_a_console_session_is_no_api_credential() {
    let baton = Baton::unthrottled().await;
    let tenant = baton.create_tenant("console-sign-in").await;
    let key = console_key(&baton, &tenant).await;
    let browser = Browser::start(ZONE).await;

    browser
        .goto(&format!("{}/console/fleet", baton.base_url))
        .await;
    browser
        .wait_text("h1", WAIT, |text| text.contains("Sign in"))
        .await;
    browser.screenshot("sign-in").await;

    // An ingest key, something that is no key, and a revoked console key are refused.
    for (attempt, expected) in [
        (tenant.api_key.as_str(), "ingest key"),
        ("not-a-key", "not a Baton key"),
        (
            "btn_aaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "Unknown or revoked",
        ),
    ] {
        sign_in(&browser, &baton, attempt).await;
        let error = browser
            .wait_text("#sign-in-error", WAIT, |text| !text.is_empty())
            .await;
        assert!(error.contains(expected), "{attempt}: {error}");
        assert!(
            browser
                .client
                .get_named_cookie("baton_console")
                .await
                .is_err()
        );
    }

    sign_in(&browser, &baton, &key).await;
    browser.wait_text("h1", WAIT, |text| text == "Fleet").await;
    let zone = browser.text("#zone-name").await;
    assert_eq!(
        zone.as_deref(),
        Some(ZONE),
        "times are in the viewer's zone"
    );
    // Keyboard first: the first Tab reaches the skip link.
    browser
        .client
        .active_element()
        .await
        .expect("focus")
        .send_keys("\u{E004}")
        .await
        .expect("tab");
    assert_eq!(
        browser
            .eval("return document.activeElement.textContent;")
            .await,
        json!("Skip to content")
    );
    let cookie = browser
        .client
        .get_named_cookie("baton_console")
        .await
        .expect("cookie");
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(format!("{:?}", cookie.same_site()), "Some(Strict)");
    assert_eq!(cookie.secure(), Some(false), "plain HTTP here: not Secure");
    let session = session_cookie(&browser).await;

    // The page is served under a strict policy, uncached.
    let page = http()
        .get(format!("{}/console/fleet", baton.base_url))
        .header("cookie", &session)
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .expect("csp");
    assert!(
        policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"),
        "{policy}"
    );
    assert_eq!(page.headers()["cache-control"], "no-store");

    // The console key is no API key, and the console cookie opens nothing under /api/v1.
    let api = baton
        .client(&tenant)
        .with_key(&key)
        .get("/api/v1/usage")
        .await;
    assert_eq!(api.status, 403, "{:?}", api.body);
    assert_eq!(api.body["error"], "access_denied");
    let cookie_only = http()
        .get(format!("{}/api/v1/usage", baton.base_url))
        .header("cookie", &session)
        .send()
        .await
        .expect("api");
    assert_eq!(cookie_only.status(), 401);

    // A sign-out from another site is refused; from the page it revokes the session.
    let forged = http()
        .post(format!("{}/console/sign-out", baton.base_url))
        .header("cookie", &session)
        .header("origin", "https://evil.example")
        .form(&[("csrf", "x")])
        .send()
        .await
        .expect("forged");
    assert_eq!(forged.status(), 403);
    browser.click("form.sign-out button").await;
    browser
        .wait_text("h1", WAIT, |text| text.contains("Sign in"))
        .await;
    let after = http()
        .get(format!("{}/console/fleet", baton.base_url))
        .header("cookie", &session)
        .send()
        .await
        .expect("after");
    assert_eq!(after.status(), 303, "the old cookie opens nothing");
    assert_eq!(after.headers()["location"], "/console/sign-in");
    browser.close().await;
}

#[tokio::test]
async fn a_hook_session_appears_on_the_fleet_live_and_turns_disconnected_when_killed() {
    let baton = Baton::unthrottled().await;
    let tenant = baton.create_tenant("console-fleet").await;
    let key = console_key(&baton, &tenant).await;
    let browser = signed_in(&baton, &key).await;
    let empty = browser.text("#machines").await.unwrap_or_default();
    assert!(empty.contains("No machine has reported yet"), "{empty}");
    // Reloads would clear this: the list below must change without one.
    browser.eval("window.__stayed = 'yes'; return 1;").await;

    let dir =
        std::env::temp_dir().join(format!("console-standin-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut client = stand_in(&dir);
    let mut home = sidecar_home(&baton, &tenant.api_key, client.id().expect("pid"));
    home.set("BATON_HOOK_HOST_LABEL", "build-box");
    let run_id = start(&home, "console-live", "startup").await;

    let row = format!("tr[data-run-id=\"{run_id}\"]");
    let text = browser
        .wait_text(&row, WAIT, |text| text.contains("live"))
        .await;
    assert!(
        text.contains("console-live") && text.contains("claude-code"),
        "{text}"
    );
    let machine = browser.text("article.machine").await.unwrap_or_default();
    assert!(
        machine.contains("build-box"),
        "the label the hook reported: {machine}"
    );
    assert!(
        machine.contains("2.1.296"),
        "the client's version: {machine}"
    );
    assert!(
        machine.contains("JST"),
        "times in the viewer's zone, named: {machine}"
    );
    browser.screenshot("fleet").await;

    kill_client(&mut client).await;
    let text = browser
        .wait_text(&row, WAIT, |text| text.contains("disconnected"))
        .await;
    assert!(!text.contains("● live"), "{text}");
    assert_eq!(
        browser.eval("return window.__stayed || null;").await,
        json!("yes"),
        "updated without a reload"
    );
    let summary = browser.text("#count-disconnected").await;
    assert_eq!(summary.as_deref(), Some("1 disconnected"));
    browser.close().await;
}

/// `data-cost-usd` of every element matching `css`.
pub(crate) async fn costs(browser: &Browser, css: &str) -> Vec<f64> {
    let script = format!(
        "return Array.from(document.querySelectorAll('{css}')).map(e => e.dataset.costUsd);"
    );
    browser
        .eval(&script)
        .await
        .as_array()
        .expect("array")
        .iter()
        .map(|value| {
            value
                .as_str()
                .and_then(|text| text.parse().ok())
                .expect("a number")
        })
        .collect()
}

#[tokio::test]
async fn the_session_page_shows_the_fixture_agent_tree_at_the_apis_cost() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("console-tree").await;
    let key = console_key(&baton, &tenant).await;
    let open = client
        .post(
            "/api/v1/agent-sessions/open",
            &json!({"agent": "claude-code", "sessionId": FIXTURE_SESSION, "source": "startup",
                    "project": "spotter"}),
        )
        .await;
    assert_eq!(open.status, 200, "{:?}", open.body);
    let run_id = open.body["sessionRunId"].as_str().expect("run").to_string();
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    lay_out(&home.home);
    ingest(&home).await;

    let tree = client
        .get(&format!("/api/v1/agent-sessions/{run_id}/tree"))
        .await;
    assert_eq!(tree.status, 200, "{:?}", tree.body);
    let api_cost = tree.body["session"]["figures"]["costUsd"]
        .as_f64()
        .expect("cost");
    assert!(api_cost > 0.0, "{}", tree.body);
    let mut api_agents: Vec<f64> = tree.body["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|agent| agent["rolledUp"]["costUsd"].as_f64().expect("rolled up"))
        .collect();
    assert!(api_agents.len() >= 3, "main and subagents: {}", tree.body);

    let browser = signed_in(&baton, &key).await;
    browser
        .goto(&format!("{}/console/sessions/{run_id}", baton.base_url))
        .await;
    let total = browser
        .wait_text("#session-cost", WAIT, |text| text.contains('$'))
        .await;
    assert!(
        total.contains("estimate"),
        "savings labelled as an estimate: {total}"
    );
    assert_eq!(costs(&browser, "#session-cost .cost").await, [api_cost]);
    let mut page_agents = costs(&browser, "#agent-tree tbody tr td:nth-child(5) .cost").await;
    api_agents.sort_by(f64::total_cmp);
    page_agents.sort_by(f64::total_cmp);
    assert_eq!(page_agents, api_agents, "every agent at the API's cost");
    let rows = browser.text("#agent-tree tbody").await.unwrap_or_default();
    assert!(rows.contains("main agent") && rows.contains("└"), "{rows}");
    browser.screenshot("session").await;

    // The list shows the same session at the same cost.
    browser
        .goto(&format!(
            "{}/console/sessions?project=spotter",
            baton.base_url
        ))
        .await;
    browser
        .wait_text("#session-list", WAIT, |text| text.contains(FIXTURE_SESSION))
        .await;
    assert_eq!(
        costs(&browser, &format!("tr[data-run-id=\"{run_id}\"] .cost")).await,
        [api_cost]
    );
    browser.screenshot("sessions").await;

    // Usage over the fixture's days, in UTC, totals what the API answers for the same range.
    let days = client
        .get("/api/v1/usage?groupBy=day&timezone=UTC&from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z")
        .await;
    assert_eq!(days.status, 200, "{:?}", days.body);
    let keys: Vec<&str> = days.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|group| group["key"].as_str())
        .collect();
    let (first, last) = (keys.first().expect("a day"), keys.last().expect("a day"));
    let after_last = chrono::NaiveDate::parse_from_str(last, "%Y-%m-%d")
        .expect("day")
        .succ_opt()
        .expect("next day");
    let range = client
        .get(&format!(
            "/api/v1/usage?groupBy=day&timezone=UTC&from={first}T00:00:00Z&to={after_last}T00:00:00Z"
        ))
        .await;
    let api_total = range.body["total"]["costUsd"].as_f64().expect("total");
    browser
        .goto(&format!(
            "{}/console/usage?from={first}&to={last}&tz=UTC",
            baton.base_url
        ))
        .await;
    browser
        .wait_text("#usage-total", WAIT, |text| text.contains('$'))
        .await;
    let page_total = costs(&browser, "#usage-total .cost").await;
    assert!(
        (page_total[0] - api_total).abs() < 1e-9,
        "{page_total:?} vs {api_total}"
    );
    let drawn = browser
        .eval("return document.querySelectorAll('canvas.chart[data-drawn]').length;")
        .await;
    assert_eq!(drawn, json!(2), "both charts drawn under the CSP");
    browser.screenshot("usage").await;

    // No page carries inline script, style or handlers (the CSP would block them).
    let session = session_cookie(&browser).await;
    for path in [
        "/console/fleet".to_string(),
        "/console/sessions".to_string(),
        format!("/console/sessions/{run_id}"),
        format!("/console/usage?from={first}&to={last}&tz=UTC"),
        "/console/sign-in".to_string(),
    ] {
        let html = http()
            .get(format!("{}{path}", baton.base_url))
            .header("cookie", &session)
            .send()
            .await
            .expect("page")
            .text()
            .await
            .expect("html");
        for (index, _) in html.match_indices("<script") {
            let end = html[index..]
                .find('>')
                .map_or(html.len(), |end| index + end);
            let tag = &html[index..end];
            assert!(
                tag.contains(" src=\"/console/assets/"),
                "{path}: inline script {tag}"
            );
        }
        for inline in [" style=", "<style", " onclick=", " onload=", "javascript:"] {
            assert!(!html.contains(inline), "{path}: {inline}");
        }
    }
    browser.close().await;
}

#[tokio::test]
async fn undo_on_a_closer_resolve_reopens_the_commitment() {
    let baton = Baton::start_with(&[UNLIMITED, ("BATON_CLOSER__ENABLED", "true")]).await;
    let (tenant, client) = baton.tenant_client("console-undo").await;
    let admin = baton.admin().await;
    let key = console_key(&baton, &tenant).await;
    let (run_id, done) = open_briefed_on_done(&client, "console-undo").await;
    finish(&client, "console-undo").await;
    let (_, outcome, resolved) = settled_pass(&admin, &run_id, 1, Duration::from_secs(30)).await;
    assert_eq!((outcome.as_str(), resolved), ("completed", 1));
    assert_eq!(commitment_status(&client, &done).await, "resolved");

    let browser = signed_in(&baton, &key).await;
    browser
        .goto(&format!("{}/console/sessions/{run_id}", baton.base_url))
        .await;
    let verdict = format!(".verdict[data-memory-id=\"{done}\"]");
    let text = browser
        .wait_text(&verdict, WAIT, |text| text.contains("resolved"))
        .await;
    assert!(
        text.contains("migrated the orders table"),
        "the evidence: {text}"
    );

    // Forged undos change nothing: no token, a wrong token, another site's page.
    let session = session_cookie(&browser).await;
    let csrf = browser
        .attribute("form.undo input[name=csrf]", "value")
        .await
        .expect("token");
    let undo_url = format!("{}/console/sessions/{run_id}/undo", baton.base_url);
    for (origin, token) in [
        (None, None),
        (None, Some("wrong")),
        (Some("https://evil.example"), Some(csrf.as_str())),
    ] {
        let mut form = vec![("memory_id", done.as_str())];
        if let Some(token) = token {
            form.push(("csrf", token));
        }
        let mut request = http()
            .post(&undo_url)
            .header("cookie", &session)
            .form(&form);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let answer = request.send().await.expect("forged undo");
        assert_eq!(answer.status(), 403, "{origin:?} {token:?}");
    }
    assert_eq!(commitment_status(&client, &done).await, "resolved");

    browser.click(&format!("{verdict} form.undo button")).await;
    let notice = browser
        .wait_text(".notice", WAIT, |text| text.contains("open again"))
        .await;
    assert!(notice.contains(&done), "{notice}");
    assert_eq!(commitment_status(&client, &done).await, "open");
    let text = browser.text(&verdict).await.unwrap_or_default();
    assert!(text.contains("Undone by a user"), "{text}");
    assert!(
        browser
            .text(&format!("{verdict} form.undo"))
            .await
            .is_none(),
        "no second undo"
    );
    let history = client
        .get(&format!("/api/v1/memories/{done}/history"))
        .await;
    let history = history.body.to_string();
    assert!(
        history.contains("user_dashboard"),
        "recorded as a user action: {history}"
    );
    browser.close().await;
}

#[tokio::test]
async fn another_tenants_session_reads_as_not_found() {
    let baton = Baton::unthrottled().await;
    let owner = baton.create_tenant("console-owner").await;
    let other = baton.create_tenant("console-other").await;
    let run_id = open_briefed(&baton.client(&owner), "owned", &[]).await;
    let key = console_key(&baton, &other).await;
    let browser = signed_in(&baton, &key).await;

    for path in [
        format!("/console/sessions/{run_id}"),
        "/console/sessions/not-a-run-id".to_string(),
    ] {
        browser.goto(&format!("{}{path}", baton.base_url)).await;
        browser
            .wait_text("h1", WAIT, |text| text == "Not found")
            .await;
        let answer = http()
            .get(format!("{}{path}", baton.base_url))
            .header("cookie", session_cookie(&browser).await)
            .send()
            .await
            .expect("page");
        assert_eq!(answer.status(), 404, "{path}");
    }
    // Nor is it listed.
    browser
        .goto(&format!("{}/console/sessions", baton.base_url))
        .await;
    let page = browser.body_text().await;
    assert!(page.contains("No session has been reported yet"), "{page}");
    assert!(!page.contains("owned"), "{page}");
    browser.close().await;
}
