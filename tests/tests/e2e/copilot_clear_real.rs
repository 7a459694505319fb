//! `/clear` in the real Copilot CLI 1.0.102, typed into its interactive screen in a private
//! tmux server: Copilot ends the session with `user_exit` (the reason `/exit` gives too) and
//! starts a new one, with a new id and `source: new`, at the next prompt in the same process.
//! Baton must close the first, open the second, and record that the second follows the first;
//! `/exit` then closes the second.

use std::time::Duration;

use baton_tests::Baton;
use baton_tests::chat_standin::{ChatStandIn, Reply, Script};
use baton_tests::poll::until;
use baton_tests::tmux::Tmux;

use crate::copilot_real::{CopilotScratch, copilot_binary, copilot_scratch};

#[tokio::test]
async fn clear_in_copilot_closes_the_session_and_the_next_prompt_opens_one_that_follows_it() {
    copilot_binary();
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("copilot-clear").await;
    let admin = baton.admin().await;
    let standin = ChatStandIn::start(Script {
        replies: vec![
            Reply::Text("First answer.".to_string()),
            Reply::Text("Second answer.".to_string()),
        ],
    })
    .await;
    let scratch = copilot_scratch(&standin, &baton, &tenant.api_key);
    scratch.user_hooks("install", &[]).await;

    let tmux = Tmux::new("copilot");
    let copilot = copilot_binary().display().to_string();
    // The folder-trust dialog is the person's to answer; the test plays the person.
    scratch
        .start_tmux(&tmux, &copilot, &[("COPILOT_ALLOW_ALL", "true")])
        .await;
    let sessions = || crate::real_client::sessions_of(&admin, "copilot");

    // Interactive Copilot starts its session at the first prompt.
    tmux.until_screen_shows("/ commands").await;
    tmux.enter("hello").await;
    tmux.until_screen_shows("First answer.").await;
    until(
        Duration::from_secs(60),
        "the first session",
        sessions,
        |rows| rows.as_array().is_some_and(|rows| rows.len() == 1),
    )
    .await;
    tmux.enter("/clear").await;
    until(
        Duration::from_secs(60),
        "the close of /clear",
        sessions,
        |rows| {
            rows.as_array()
                .is_some_and(|rows| rows.len() == 1 && rows[0][2] == true)
        },
    )
    .await;
    tmux.enter("again").await;
    tmux.until_screen_shows("Second answer.").await;
    let rows = until(
        Duration::from_secs(60),
        "the next session",
        sessions,
        |rows| {
            rows.as_array()
                .is_some_and(|rows| rows.len() == 2 && rows[1][2] == false)
        },
    )
    .await;
    crate::real_client::assert_second_follows_first(&client, &rows).await;

    // The client's own exit first (it can take long under load), then the close it reported.
    tmux.exit_with("/exit", Duration::from_secs(180), || scratch.log_tail(40))
        .await;
    crate::real_client::until_both_closed(&admin, "copilot", "the close after /exit").await;
}
