//! Runaway sessions end to end through the real gateway, usage service, relay and broker, and
//! the console in a real Chromium: a session whose spend inside the tenant's window passes its
//! limit is flagged once (more spend in the same episode raises nothing), a main agent working
//! an hour past the last prompt is flagged `unattended` and cleared by a new prompt; flagged
//! sessions carry `runaway` in the API and a badge on the fleet and session pages; another
//! tenant sees none of it.

use serde_json::{Value, json};

use baton_proto::messages::{RUNAWAY_FLAGGED, RunawayFlagged};
use baton_tests::Baton;
use baton_tests::Client;

use crate::budgets::{batch_at, row_cost, upload};
use crate::bus_messages::Messages;
use crate::console::{WAIT, console_key, signed_in};

/// The wall clock minus `minutes`, as the hook would stamp it (the console reads real time).
fn ago(minutes: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::minutes(minutes))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

async fn next_flag(messages: &mut Messages) -> RunawayFlagged {
    messages
        .next()
        .await
        .payload(RUNAWAY_FLAGGED)
        .expect("payload")
}

async fn runaway_of(client: &Client, session: &str) -> Value {
    let listed = client.get("/api/v1/usage/sessions?limit=200").await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    listed.body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|row| row["sessionId"] == session)
        .map(|row| row["runaway"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_session_is_flagged_once_per_episode_and_shown_on_the_console() {
    let baton = Baton::unthrottled().await;
    let mut flags = Messages::bind(&baton, RUNAWAY_FLAGGED).await;
    let cost = row_cost(&baton).await;
    let (tenant, client) = baton.tenant_client("runaway").await;
    let at = ago(10);
    let defaults = client.get("/api/v1/runaway-policy").await;
    assert_eq!(
        defaults.body,
        json!({"windowMinutes": 15, "spendUsd": 10.0, "unattendedMinutes": 60})
    );
    // Five rows' worth in 15 minutes.
    let limit = (cost * 5.0 * 1e6).round() / 1e6;
    let policy = json!({"windowMinutes": 15, "spendUsd": limit, "unattendedMinutes": 60});
    let set = client.put("/api/v1/runaway-policy", &policy).await;
    assert_eq!(set.status, 200, "{:?}", set.body);

    upload(&client, &batch_at("burner", "b", 0..4, &at)).await;
    assert_eq!(
        runaway_of(&client, "burner").await,
        json!([]),
        "at 4 rows: not yet"
    );
    upload(&client, &batch_at("burner", "b", 4..6, &at)).await;
    let flag = next_flag(&mut flags).await;
    assert_eq!(
        (flag.session_id.as_str(), flag.reason.as_str()),
        ("burner", "spend")
    );
    assert!((flag.spent_usd - cost * 6.0).abs() < 1e-6, "{flag:?}");
    assert_eq!(runaway_of(&client, "burner").await, json!(["spend"]));
    // More spend in the same episode, and the same facts again: nothing new.
    upload(&client, &batch_at("burner", "b", 6..8, &at)).await;
    upload(&client, &batch_at("burner", "b", 6..8, &at)).await;

    // A main agent working 90 minutes after the last prompt: unattended.
    let prompt = chrono::Utc::now() - chrono::Duration::minutes(100);
    let prompt_text = prompt.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut quiet = batch_at("quiet", "q", 0..1, &at);
    quiet["deliveries"] = json!([{"deliveryId": uuid::Uuid::new_v4().to_string(),
        "agent": "claude-code", "sessionId": "quiet", "event": "UserPromptSubmit",
        "observedAt": prompt_text}]);
    upload(&client, &quiet).await;
    let flag = next_flag(&mut flags).await;
    assert_eq!(
        (flag.session_id.as_str(), flag.reason.as_str()),
        ("quiet", "unattended"),
        "the burner raised nothing more before it"
    );
    assert_eq!(
        flag.started_at.timestamp(),
        (prompt + chrono::Duration::minutes(60)).timestamp(),
        "unattended from the last prompt plus the limit"
    );
    // A new prompt ends the episode.
    let mut answered = batch_at("quiet", "q2", 0..1, &ago(4));
    answered["deliveries"] = json!([{"deliveryId": uuid::Uuid::new_v4().to_string(),
        "agent": "claude-code", "sessionId": "quiet", "event": "UserPromptSubmit",
        "observedAt": ago(5)}]);
    upload(&client, &answered).await;
    assert_eq!(runaway_of(&client, "quiet").await, json!([]));
    let flagged_only = client.get("/api/v1/usage/sessions?runaway=true").await;
    let ids: Vec<&str> = flagged_only.body["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|row| row["sessionId"].as_str())
        .collect();
    assert_eq!(ids, ["burner"]);

    // The console: the fleet lists it with a badge, its page carries the badge.
    let key = console_key(&baton, &tenant).await;
    let browser = signed_in(&baton, &key).await;
    browser
        .goto(&format!("{}/console/fleet", baton.base_url))
        .await;
    let table = browser
        .wait_text("#runaway-sessions", WAIT, |text| text.contains("burner"))
        .await;
    assert!(
        table.contains("spend") && !table.contains("quiet"),
        "{table}"
    );
    browser.click("#runaway-sessions a").await;
    let badge = browser
        .wait_text("#runaway-badge", WAIT, |text| text.contains("spend"))
        .await;
    assert!(badge.contains("running away"), "{badge}");
    browser.screenshot("runaway").await;
    browser.close().await;

    // Another tenant: defaults, no flagged session.
    let stranger = baton.client(&baton.create_tenant("runaway-other").await);
    assert_eq!(
        stranger.get("/api/v1/runaway-policy").await.body,
        defaults.body
    );
    let theirs = stranger.get("/api/v1/usage/sessions?runaway=true").await;
    assert_eq!(theirs.body["sessions"], json!([]));
    // Bad policies are refused.
    for bad in [
        json!({"windowMinutes": 0, "spendUsd": 1.0, "unattendedMinutes": 60}),
        json!({"windowMinutes": 15, "spendUsd": 0, "unattendedMinutes": 60}),
        json!({"windowMinutes": 15, "spendUsd": 1.0}),
    ] {
        let answer = client.put("/api/v1/runaway-policy", &bad).await;
        assert_eq!(answer.status, 400, "{bad}");
    }
}
