//! `baton-hook`: the one binary Claude Code, Codex, Cursor, Gemini CLI and Copilot CLI hook
//! settings call.
//!
//! ```text
//! baton-hook <claude-code|codex|cursor|gemini|copilot> <session-start|stop|session-end|pre-compact|user-prompt-submit> [--nudge]
//! baton-hook install   --harness <h> [--scope user|project] [--project-dir DIR] [--nudge]
//! baton-hook uninstall --harness <h> [--scope user|project] [--project-dir DIR]
//! baton-hook drain        send what the spool holds (waits for a drain already running)
//! baton-hook drain --detached  the bounded background drain hook runs start
//! baton-hook usage <daily|session|blocks|models|tree ID> [--json] ...  local token/cost report
//! baton-hook ingest [--json] [--no-cache] [--resend]  backfill every local transcript's usage
//! baton-hook sidecar ...  (started by SessionStart, never by hand)
//! ```
//!
//! Every delivery a hook run handles is also recorded, identifiers only, in the spool for the
//! usage context ([`upload::deliveries`]); `user-prompt-submit` does nothing else.
//!
//! A hook run never breaks the agent: whatever happens it exits 0, prints nothing unless it
//! has something for the harness, and writes at most a line per failure to its local log.

mod ancestry;
mod backoff;
mod briefing;
mod claims;
mod clear_marker;
mod clock;
mod config;
mod context;
mod dotted_version;
mod drain;
mod drainer;
mod end;
mod exit_shield;
mod fsutil;
mod harness;
mod http;
mod ingest;
mod install;
mod last_message;
mod log;
mod output;
mod package_version;
mod payload;
mod process;
mod proctable;
mod project;
mod sent;
mod setup;
mod sidecar;
mod sidecar_launch;
mod spool;
mod start;
mod stop;
mod text;
mod upload;
mod usage;

use std::io::Write;
use std::time::{Duration, Instant};

use config::Env;
use harness::Harness;
use payload::{Event, Rejected};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().map(String::as_str).unwrap_or("");
    match command {
        "install" | "uninstall" => std::process::exit(setup::run(command, &args[1..])),
        "sidecar" => {
            if let Some(parsed) = sidecar::parse_args(&args[1..]) {
                sidecar::run(Env::capture(), parsed);
            }
        }
        "drain" if args.get(1).map(String::as_str) == Some("--detached") => {
            drainer::run(&Env::capture())
        }
        "drain" => drain(),
        "usage" => std::process::exit(usage::run(&args[1..])),
        "ingest" => std::process::exit(ingest::run(&args[1..])),
        "version" | "--version" => println!("baton-hook {}", env!("CARGO_PKG_VERSION")),
        _ => {
            let started = Instant::now();
            // Whatever a handler does, the agent sees exit 0.
            let _ = std::panic::catch_unwind(|| hook(&args, started));
        }
    }
}

/// One hook delivery, end to end.
fn hook(args: &[String], started: Instant) {
    let env = Env::capture();
    let state_dir = env.state_dir();
    let format = args.first().and_then(|name| Harness::parse(name));
    let word = args.get(1).and_then(|word| Event::parse(word));
    // Up before anything else when the command names the end; else once the payload does.
    let mut shield = (word == Some(Event::SessionEnd)).then(exit_shield::Shield::raise);
    let budget = word.map_or(Duration::from_secs(8), context::budget);
    let deadline = started + budget;
    let Some(bytes) = payload::read_stdin(deadline.saturating_duration_since(Instant::now()))
    else {
        log::line(&state_dir, "hook", "-", "stdin_unreadable");
        return;
    };
    let input = match payload::parse(&bytes, word) {
        Ok(input) => input,
        Err(Rejected::UnknownEvent) => return,
        Err(rejected) => {
            log::line(
                &state_dir,
                "hook",
                "-",
                &format!("payload_{rejected:?}").to_lowercase(),
            );
            return;
        }
    };
    if subagent(&env, &input) {
        return;
    }
    if input.event == Event::SessionEnd && shield.is_none() {
        shield = Some(exit_shield::Shield::raise());
    }
    let deadline = started + context::budget(input.event);
    let harness = harness::detect(
        format,
        &input.raw,
        harness::Host::of(env.pairs(), &input.raw),
    );
    let input = match harness {
        Harness::Copilot => copilot_input(&env, input),
        _ => input,
    };
    if input.event == Event::UserPromptSubmit {
        // Spool-only: no network, no output, no drainer started on the prompt's path.
        record_delivery(&state_dir, harness, &input);
        return;
    }
    let printed = if input.event == Event::Stop {
        // A turn end is on the user's path (issue 25): its delivery record's durable append (a
        // write and an fdatasync) runs beside the heartbeat, which waits on the network,
        // instead of before it. Joined before the drainer looks at the spools. Other events
        // keep the record first, so it precedes what they spool themselves.
        std::thread::scope(|scope| {
            let recording = scope.spawn(|| record_delivery(&state_dir, harness, &input));
            let printed = handle(args, format, harness, &input, &env, &state_dir, deadline);
            let _ = recording.join();
            printed
        })
    } else {
        record_delivery(&state_dir, harness, &input);
        handle(args, format, harness, &input, &env, &state_dir, deadline)
    };
    if let Some(value) = printed {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{value}");
        let _ = stdout.flush();
    }
    // A spooled call never waits for a sidecar that may not exist (none found, uninstalled).
    // At a turn end the delivery record waits for the next drain.
    let urgency = if input.event == Event::Stop {
        drainer::Urgency::Batched
    } else {
        drainer::Urgency::Now
    };
    drainer::start_if_needed(&state_dir, urgency);
    if shield.is_some_and(|shield| shield.outlived_a_signal()) {
        log::line(&state_dir, "hook", harness.name(), "end_outlived_a_signal");
    }
}

/// The event's own work; what it prints.
fn handle(
    args: &[String],
    format: Option<Harness>,
    harness: Harness,
    input: &payload::Input,
    env: &Env,
    state_dir: &std::path::Path,
    deadline: Instant,
) -> Option<serde_json::Value> {
    let context = context::Hook {
        client: context::client(env, deadline),
        format: format.unwrap_or(harness),
        nudge_argument: args.iter().any(|arg| arg == "--nudge"),
        event: input.event,
        harness,
        state_dir: state_dir.to_path_buf(),
        env: env.clone(),
    };
    match input.event {
        Event::SessionStart => start::run(&context, input),
        Event::Stop => stop::run(&context, input),
        Event::SessionEnd => end::run(&context, input),
        Event::PreCompact => stop::pre_compact(&context, input),
        Event::UserPromptSubmit => None,
    }
}

/// Copilot CLI names the transcript only on some events (its place is fixed by the session),
/// and its turn end carries no final text: the text is the transcript's last answer.
fn copilot_input(env: &Env, input: payload::Input) -> payload::Input {
    let transcript_path = input
        .transcript_path
        .clone()
        .or_else(|| harness::copilot_transcript(env, &input.session_id));
    let stopped_at = input.raw.get("timestamp").cloned();
    let last_assistant_message = match (&input.last_assistant_message, input.event, stopped_at) {
        (None, Event::Stop, Some(stopped_at)) => transcript_path.as_deref().and_then(|path| {
            last_message::copilot_answer_waiting(
                std::path::Path::new(path),
                &stopped_at,
                last_message::PATIENCE,
            )
        }),
        _ => input.last_assistant_message.clone(),
    };
    payload::Input {
        transcript_path,
        last_assistant_message,
        ..input
    }
}

/// Appends the identifier-only record of this delivery to the spool (seed 002), with a minimal
/// session fact the drain drops once the server has the session's own.
fn record_delivery(state_dir: &std::path::Path, harness: Harness, input: &payload::Input) {
    let event = input
        .raw
        .get("hook_event_name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or(input.event.name());
    let now = chrono::Utc::now().timestamp_millis();
    let Some(delivery) =
        upload::deliveries::delivery(harness.name(), &input.session_id, event, now)
    else {
        return;
    };
    // The project: the working folder's slug, else the transcript's project folder (already
    // a slug) — never the path itself.
    let folder = input.cwd.clone().or_else(|| {
        let path = std::path::Path::new(input.transcript_path.as_deref()?);
        Some(path.parent()?.file_name()?.to_str()?.to_string())
    });
    let session = folder.as_deref().and_then(|cwd| {
        upload::deliveries::session_fact(
            harness.name(),
            &input.session_id,
            cwd,
            &delivery.observed_at,
        )
    });
    let entry = upload::deliveries::entry(&process::host_id(), &delivery, session);
    if let Err(error) = spool::Spool::usage_in_state(state_dir).append(&entry) {
        log::line(state_dir, input.event.word(), harness.name(), error.code());
    }
}

/// Subagent contexts do nothing: a payload naming an `agent_id`, `BATON_HOOK_ROLE=subagent`,
/// or a secondary git worktree.
fn subagent(env: &Env, input: &payload::Input) -> bool {
    input.agent_id.is_some()
        || env.get("BATON_HOOK_ROLE") == Some("subagent")
        || input
            .cwd
            .as_deref()
            .and_then(|cwd| project::checkout(std::path::Path::new(cwd)))
            .is_some_and(|checkout| checkout.secondary_worktree)
}

/// Sends the spool now, by hand.
fn drain() {
    let env = Env::capture();
    let state_dir = env.state_dir();
    let Ok(client) = context::client(&env, Instant::now() + Duration::from_secs(3600)) else {
        log::line(&state_dir, "drain", "-", "config_missing");
        return;
    };
    spool::Spool::in_state(&state_dir).drain_all(&client, true, |status| {
        log::line(&state_dir, "drain", "-", &format!("spool_refused_{status}"));
    });
    spool::Spool::usage_in_state(&state_dir).drain_all(&client, true, |status| {
        log::line(&state_dir, "drain", "-", &format!("usage_refused_{status}"));
    });
}
