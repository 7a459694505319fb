//! The real Copilot CLI 1.0.102 with `baton-hook` installed, against a real Baton and the Chat
//! Completions stand-in: Baton's usage read, filled by the session's sidecar and sessionEnd's
//! flush, and `baton-hook usage` on the same machine report exactly the usage the stand-in
//! issued, converted from Chat Completions' counts to Baton's kinds (`prompt_tokens` includes
//! the cached ones; `completion_tokens` includes the reasoning ones): input = prompt − cached,
//! cache read = cached, output = completion (reasoning stated apart, already inside it).

use baton_tests::Baton;
use baton_tests::chat_standin::{ChatStandIn, Script};

use crate::copilot_real::{CopilotScratch, MODEL, copilot_scratch, finished};

#[tokio::test]
async fn a_real_copilot_session_is_in_the_usage_read_and_the_local_report_exactly() {
    crate::copilot_real::copilot_binary();
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("copilot-usage").await;
    let standin = ChatStandIn::start(Script {
        replies: crate::real_client::three_answers(),
    })
    .await;
    let scratch = copilot_scratch(&standin, &baton, &tenant.api_key);
    scratch.user_hooks("install", &[]).await;
    let session_id = uuid::Uuid::new_v4().to_string();
    finished(
        scratch.copilot("Say hello.", &["--session-id", &session_id]),
        "first run",
    )
    .await;
    // A resumed run appends to the same events.jsonl; one more response per run.
    let resume = format!("--resume={session_id}");
    finished(scratch.copilot("Again.", &[&resume]), "resume").await;
    finished(scratch.copilot("Once more.", &[&resume]), "resume").await;
    let issued = crate::real_client::issued_three_streamed(&standin, "Copilot CLI");
    let expected = crate::real_client::issued_tokens(&issued, |response| {
        let usage = response.usage;
        [
            usage.prompt - usage.cached,
            usage.completion,
            usage.cached,
            usage.reasoning,
        ]
    });

    crate::real_client::assert_usage_everywhere(
        &client,
        &scratch.home(),
        &expected,
        MODEL,
        "copilot",
        &session_id,
        3,
    )
    .await;
}
