//! The real Gemini CLI 0.61.0 with `baton-hook` installed, against a real Baton and the Gemini
//! API stand-in: Baton's usage read, filled by the session's sidecar and SessionEnd's flush,
//! and `baton-hook usage` on the same machine report exactly the usage the stand-in issued,
//! converted from Gemini's counts to Baton's kinds (HOOKS.md 4.10: `promptTokenCount` includes
//! the cached tokens; thoughts are billed as output; tool-use prompt tokens are input):
//! input = prompt − cached + tool-use prompt, cache read = cached, output = candidates +
//! thoughts (the thoughts also stated apart as reasoning), no cache writes.

use baton_tests::Baton;
use baton_tests::gemini_standin::{GeminiStandIn, Script};

use crate::gemini_real::{GeminiScratch, MODEL, finished, gemini_binary, gemini_scratch};

#[tokio::test]
async fn a_real_gemini_session_is_in_the_usage_read_and_the_local_report_exactly() {
    gemini_binary();
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("gemini-usage").await;
    let standin = GeminiStandIn::start(Script {
        replies: crate::real_client::three_answers(),
    })
    .await;
    let scratch = gemini_scratch(&standin, &baton, &tenant.api_key);
    scratch.user_hooks("install", &[]).await;
    let session_id = uuid::Uuid::new_v4().to_string();
    finished(
        scratch.gemini("Say hello.", &["--session-id", &session_id]),
        "first run",
    )
    .await;
    // A resumed run appends to the same chat file; two more responses, one per run.
    finished(
        scratch.gemini("Again.", &["--resume", &session_id]),
        "resume",
    )
    .await;
    finished(
        scratch.gemini("Once more.", &["--resume", &session_id]),
        "resume",
    )
    .await;
    let what = format!("Gemini CLI {MODEL}");
    let issued = crate::real_client::issued_three_streamed(&standin, &what);
    let expected = crate::real_client::issued_tokens(&issued, |response| {
        let usage = response.usage;
        [
            usage.prompt - usage.cached + usage.tool_prompt,
            usage.candidates + usage.thoughts,
            usage.cached,
            usage.thoughts,
        ]
    });

    crate::real_client::assert_usage_everywhere(
        &client,
        &scratch.home(),
        &expected,
        MODEL,
        "gemini",
        &session_id,
        3,
    )
    .await;
}
