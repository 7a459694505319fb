//! Members end to end, with the real binaries: `baton key create --member` mints keys that
//! speak for alice and bob, and a key without one; usage uploaded through each (one by the real
//! `baton-hook ingest`) splits exactly by `groupBy=member`, `unattributed` included; sessions
//! carry every member that reported them, in the API and the console, and filter by member;
//! `baton key list` and the console's keys page show members and never a secret; another
//! tenant sees none of it; an invalid member is refused at `key create`.

use std::collections::BTreeMap;
use std::process::Output;

use serde_json::{Value, json};
use uuid::Uuid;

use baton_tests::hook::HookHome;
use baton_tests::{Baton, Tenant};

use crate::console::{console_key, http, session_cookie, signed_in};
use crate::usage_hook::lay_out;
use crate::usage_real::ingest;
use crate::usage_upload::{BATCHES, tree_batch};

/// [`tree_batch`] with dedup keys of its own (they are unique per tenant and harness, as a
/// transcript's message ids are).
fn own_batch(session: &str) -> Value {
    let mut batch = tree_batch(session, &Uuid::new_v4().to_string());
    for row in batch["usage"].as_array_mut().expect("usage") {
        let key = format!("{session}:{}", row["dedupKey"].as_str().expect("key"));
        row["dedupKey"] = json!(key);
    }
    batch
}

/// Runs the real CLI's `key create` for an ingest key of `tenant`, with `extra` arguments.
async fn create_ingest_key(baton: &Baton, tenant: &Tenant, extra: &[&str]) -> Output {
    let args = [
        "key",
        "create",
        "--tenant",
        &tenant.tenant_id,
        "--scope",
        "ingest",
    ];
    baton.cli(&[&args[..], extra].concat(), &[]).await
}

/// Mints an ingest key for `member` (none when `None`) through the real CLI.
async fn key_for(baton: &Baton, tenant: &Tenant, member: Option<&str>) -> String {
    let output = match member {
        Some(member) => create_ingest_key(baton, tenant, &["--member", member]).await,
        None => create_ingest_key(baton, tenant, &[]).await,
    };
    assert!(output.status.success(), "{output:?}");
    let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(line["member"].as_str(), member);
    line["apiKey"].as_str().expect("key").to_string()
}

fn costs_by_key(answer: &Value) -> BTreeMap<String, f64> {
    answer["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|group| {
            (
                group["key"].as_str().expect("key").to_string(),
                group["figures"]["costUsd"].as_f64().expect("cost"),
            )
        })
        .collect()
}

#[tokio::test]
async fn usage_and_sessions_are_attributed_to_the_member_of_the_key_that_sent_them() {
    let baton = Baton::unthrottled().await;
    let tenant = baton.create_tenant("members").await;
    let alice = baton
        .client(&tenant)
        .with_key(&key_for(&baton, &tenant, Some("alice")).await);
    let bob_key = key_for(&baton, &tenant, Some("bob")).await;
    let bob = baton.client(&tenant).with_key(&bob_key);
    let nobody = baton
        .client(&tenant)
        .with_key(&key_for(&baton, &tenant, None).await);

    // Bob's real hook backfills the fixture transcripts; alice and a member-less key upload
    // a session each, and alice also re-sends part of what bob sent (a session both report).
    let home = HookHome::new(&baton.base_url, &bob_key);
    lay_out(&home.home);
    let summary = ingest(&home).await;
    assert_eq!(summary["failures"], json!([]), "{summary}");
    for (client, session) in [
        (&alice, "alice-1"),
        (&nobody, "nobody-1"),
        (&alice, "shared"),
    ] {
        let answer = client.post(BATCHES, &own_batch(session)).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    let mut shared = own_batch("shared");
    shared["usage"] = json!([]);
    let answer = bob.post(BATCHES, &shared).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);

    let range = "from=2025-12-01T00:00:00Z&to=2026-12-01T00:00:00Z";
    let by_member = alice
        .get(&format!("/api/v1/usage?groupBy=member&{range}"))
        .await;
    assert_eq!(by_member.status, 200, "{:?}", by_member.body);
    let split = costs_by_key(&by_member.body);
    assert_eq!(
        split.keys().collect::<Vec<_>>(),
        ["alice", "bob", "unattributed"],
        "{split:?}"
    );
    let total = by_member.body["total"]["costUsd"].as_f64().expect("total");
    let sum: f64 = split.values().sum();
    assert!(
        (sum - total).abs() < 1e-9,
        "members add up: {sum} vs {total}"
    );
    let by_model = alice
        .get(&format!("/api/v1/usage?groupBy=model&{range}"))
        .await;
    let model_total = by_model.body["total"]["costUsd"].as_f64().expect("total");
    assert!((model_total - total).abs() < 1e-9, "same total either way");

    // Sessions carry every member that reported them, and filter by member.
    let listed = |query: String| {
        let alice = alice.clone();
        async move {
            let answer = alice
                .get(&format!("/api/v1/usage/sessions?{range}&limit=200{query}"))
                .await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
            answer.body["sessions"]
                .as_array()
                .expect("sessions")
                .iter()
                .map(|session| {
                    let members: Vec<String> = session["members"]
                        .as_array()
                        .expect("members")
                        .iter()
                        .map(|member| member.as_str().expect("name").to_string())
                        .collect();
                    (
                        session["sessionId"].as_str().expect("id").to_string(),
                        members,
                    )
                })
                .collect::<BTreeMap<String, Vec<String>>>()
        }
    };
    let all = listed(String::new()).await;
    assert_eq!(all["shared"], ["alice", "bob"]);
    assert_eq!(all["alice-1"], ["alice"]);
    assert!(all["nobody-1"].is_empty());
    let alices = listed("&member=alice".into()).await;
    assert_eq!(alices.keys().collect::<Vec<_>>(), ["alice-1", "shared"]);
    let unattributed = listed("&member=unattributed".into()).await;
    assert_eq!(unattributed.keys().collect::<Vec<_>>(), ["nobody-1"]);
    let refused = alice.get("/api/v1/usage/sessions?member=-x").await;
    assert_eq!(refused.status, 400, "{:?}", refused.body);

    // A hook session opened with alice's key lists her on the console; the filter finds it.
    let open = alice
        .post(
            "/api/v1/agent-sessions/open",
            &json!({"agent": "codex", "sessionId": "alice-hook", "source": "startup"}),
        )
        .await;
    assert_eq!(open.status, 200, "{:?}", open.body);
    let console = console_key(&baton, &tenant).await;
    let browser = signed_in(&baton, &console).await;
    let cookie = session_cookie(&browser).await;
    browser.close().await;
    let page = |path: &str| {
        let url = format!("{}{path}", baton.base_url);
        let cookie = cookie.clone();
        async move {
            http()
                .get(url)
                .header("cookie", cookie)
                .send()
                .await
                .expect("page")
                .text()
                .await
                .expect("html")
        }
    };
    let html = page("/console/sessions?member=alice").await;
    assert!(
        html.contains("alice-hook") && html.contains("alice-1"),
        "{html}"
    );
    assert!(!html.contains("nobody-1"), "only alice's sessions");
    let keys = page("/console/keys").await;
    assert!(keys.contains(">alice<") && keys.contains(">bob<"), "{keys}");
    assert!(!keys.contains(&bob_key), "never a secret");
    let usage = page("/console/usage?from=2026-01-01&to=2026-12-01&tz=UTC&by=month").await;
    let members_table = &usage[usage.find("id=\"usage-members\"").expect("members table")..];
    assert!(members_table.contains(">unattributed<"), "{members_table}");

    // `baton key list`: members, never secrets.
    let output = baton
        .cli(&["key", "list", "--tenant", &tenant.tenant_id], &[])
        .await;
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let members: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("json")["member"].clone())
        .collect();
    assert!(members.contains(&json!("alice")) && members.contains(&json!(null)));
    assert!(!text.contains(&bob_key), "never a secret");

    // Another tenant sees no member and no session of these.
    let (_, stranger) = baton.tenant_client("members-other").await;
    let theirs = stranger
        .get(&format!("/api/v1/usage?groupBy=member&{range}"))
        .await;
    assert_eq!(theirs.body["groups"], json!([]), "{:?}", theirs.body);

    // An invalid member is refused at creation, saying why.
    for bad in ["unattributed", "al ice", "-x"] {
        let member = format!("--member={bad}");
        let output = create_ingest_key(&baton, &tenant, &[&member]).await;
        assert!(!output.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("member"),
            "{bad}: {output:?}"
        );
    }
}
