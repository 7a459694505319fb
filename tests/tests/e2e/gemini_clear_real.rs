//! `/clear` in the real Gemini CLI 0.61.0, typed into its interactive screen in a private tmux
//! server (a bare pseudo-terminal leaves Gemini's terminal queries unanswered and its prompt
//! never appears): Gemini ends the session (SessionEnd `clear`) and starts another with a new
//! id in the same process (SessionStart `clear`). Baton must close the first, open the second,
//! and record that the second follows the first; `/quit` then closes the second.

use std::time::Duration;

use baton_tests::Baton;
use baton_tests::gemini_standin::{GeminiStandIn, Script};
use baton_tests::poll::until;
use baton_tests::tmux::Tmux;

use crate::gemini_real::{MODEL, gemini_binary, gemini_scratch};

#[tokio::test]
async fn clear_in_gemini_closes_the_session_and_opens_one_that_follows_it() {
    gemini_binary();
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("gemini-clear").await;
    let admin = baton.admin().await;
    let standin = GeminiStandIn::start(Script::default()).await;
    let scratch = gemini_scratch(&standin, &baton, &tenant.api_key);
    scratch.user_hooks("install", &[]).await;

    // The server starts with exactly the scratch environment; the window runs Gemini in the
    // project folder.
    let tmux = Tmux::new("gemini");
    let gemini = format!("{} -m {MODEL}", gemini_binary().display());
    scratch.start_tmux(&tmux, &gemini, &[]).await;

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
    // under load, the input was logged (its logs.json) and no SessionEnd hook ran at all; and
    // an Enter can go to the slash-command menu drawn as the command is typed. A person whose
    // `/clear` did nothing submits it again; so does this test, at most twice, after 30 seconds
    // each, and only while no SessionEnd(clear) has run (the hook leaves its `cleared` folder),
    // so a slow clear is seldom typed into. Seldom, not never: a `/clear` typed while Gemini is
    // still busy with the first is queued as a message and may reach the model as a prompt,
    // which is why the end of the test allows prompts made only of that command.
    let marker = scratch.root.join("home/.baton/cleared");
    tmux.enter("/clear").await;
    let started = std::time::Instant::now();
    let (mut submitted_at, mut submits) = (std::time::Instant::now(), 1);
    let rows = loop {
        let rows = sessions().await;
        if cleared(&rows) {
            break rows;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the session after /clear: never reached: {rows}\n{}",
            tmux.screen().await
        );
        if submits < 3 && submitted_at.elapsed() > Duration::from_secs(30) && !marker.exists() {
            tmux.resubmit("/clear", "Type your message").await;
            submits += 1;
            submitted_at = std::time::Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    crate::real_client::assert_second_follows_first(&client, &rows).await;

    tmux.until_screen_shows("Type your message").await;
    // The client's own exit first (it can take long under load), then the close it reported.
    tmux.exit_with("/quit", Duration::from_secs(180), String::new)
        .await;
    let closed =
        crate::real_client::until_both_closed(&admin, "gemini", "the close after /quit").await;
    assert_eq!(closed.as_array().map(Vec::len), Some(2), "{closed}");
    // Nothing the test did not type reached the model: no prompt at all, or only a resubmitted
    // `/clear` that Gemini took as a message.
    let prompts: Vec<String> = standin
        .issued()
        .into_iter()
        .map(|issued| issued.user_text)
        .collect();
    assert!(
        prompts.iter().all(|text| only_clear_commands(text)),
        "a prompt other than a typed /clear was sent: {prompts:?} {:?}",
        standin.requests()
    );
}

/// Whether every line of a prompt's text that is not blank is the command `/clear` (pure).
fn only_clear_commands(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .all(|line| line == "/clear")
}

#[test]
fn only_typed_clear_commands_pass_for_a_prompt() {
    for (text, passes) in [
        ("/clear", true),
        ("/clear\n\n/clear", true),
        (" /clear \n", true),
        ("/clear please", false),
        ("hello", false),
        ("/quit", false),
    ] {
        assert_eq!(only_clear_commands(text), passes, "{text:?}");
    }
}
