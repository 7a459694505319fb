//! `/clear` in the real Gemini CLI 0.61.0, typed into its interactive screen in a private tmux
//! server (a bare pseudo-terminal leaves Gemini's terminal queries unanswered and its prompt
//! never appears): Gemini ends the session (SessionEnd `clear`) and starts another with a new
//! id in the same process (SessionStart `clear`). Baton must close the first, open the second,
//! and record that the second follows the first; `/quit` then closes the second.

use std::time::Duration;

use baton_tests::Baton;
use baton_tests::gemini_standin::{GeminiStandIn, Script};
use baton_tests::tmux::Tmux;

use crate::claude_hooks_real::until;
use crate::gemini_real::{MODEL, Scratch, gemini_binary};

#[tokio::test]
async fn clear_in_gemini_closes_the_session_and_opens_one_that_follows_it() {
    gemini_binary();
    let baton = Baton::start_with(&[("BATON_RATE_LIMIT__REQUESTS", "1000000")]).await;
    let tenant = baton.create_tenant("gemini-clear").await;
    let client = baton.client(&tenant);
    let admin = baton.admin().await;
    let standin = GeminiStandIn::start(Script::default()).await;
    let scratch = Scratch::new(&standin, Some((&baton, &tenant.api_key)));
    scratch.baton_hook("install", &[]).await;

    // The server starts with exactly the scratch environment; the window runs Gemini in the
    // project folder.
    let tmux = Tmux::new("gemini");
    let gemini = format!("{} -m {MODEL}", gemini_binary().display());
    let started = scratch
        .command(std::path::Path::new("tmux"))
        .args(tmux.start_args(&gemini))
        .env("TERM", "xterm-256color")
        .output()
        .await
        .expect("tmux");
    assert!(started.status.success(), "{started:?}");

    let sessions = || crate::real_client::sessions_of(&admin, "gemini");
    until(Duration::from_secs(60), "startup", sessions, |rows| {
        rows.as_array().is_some_and(|rows| rows.len() == 1)
    })
    .await;
    tmux.until_screen_shows("Type your message").await;
    let cleared = |rows: &serde_json::Value| {
        rows.as_array()
            .is_some_and(|rows| rows.len() == 2 && rows[0][2] == true && rows[1][2] == false)
    };
    // Gemini acts on a `/clear` typed in its first moments only once it is fully up: seen
    // under load, the input was logged (its logs.json) and no SessionEnd hook ran at all. A
    // person types it again; so does this test, only while no SessionEnd(clear) has run (the
    // hook leaves its `cleared` folder), so a slow clear is never cleared twice.
    let marker = scratch.root.join("home/.baton/cleared");
    let mut typed = 0;
    let rows = loop {
        tmux.enter("/clear").await;
        typed += 1;
        let started = std::time::Instant::now();
        let seen = loop {
            let rows = sessions().await;
            if cleared(&rows) {
                break Some(rows);
            }
            if started.elapsed() > Duration::from_secs(15) && !marker.exists() && typed < 3 {
                break None;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the session after /clear: never reached: {rows}\n{}",
                tmux.screen().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        if let Some(rows) = seen {
            break rows;
        }
        tmux.until_screen_shows("Type your message").await;
    };
    let (old_run, new_run) = (
        rows[0][0].as_str().expect("run").to_string(),
        rows[1][0].as_str().expect("run").to_string(),
    );
    assert_ne!(rows[0][1], rows[1][1], "a new session id");
    let read = client
        .get(&format!("/api/v1/agent-sessions/{new_run}/liveness"))
        .await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(
        read.body["followsSessionRunId"],
        old_run.as_str(),
        "the new session follows the cleared one: {}",
        read.body
    );

    tmux.until_screen_shows("Type your message").await;
    // The client's own exit first (it can take long under load), then the close it reported.
    tmux.exit_with("/quit", Duration::from_secs(180), String::new)
        .await;
    let closed = until(
        Duration::from_secs(30),
        "the close after /quit",
        sessions,
        |rows| {
            rows.as_array()
                .is_some_and(|rows| rows.len() == 2 && rows.iter().all(|row| row[2] == true))
        },
    )
    .await;
    assert_eq!(closed.as_array().map(Vec::len), Some(2), "{closed}");
    assert!(
        standin.requests().is_empty(),
        "no prompt was sent: {:?}",
        standin.requests()
    );
}
