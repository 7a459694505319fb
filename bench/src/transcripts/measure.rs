//! Wall time and peak RSS of one process. `getrusage(RUSAGE_CHILDREN)` reports the largest peak
//! over every child a process has reaped, so each measured process is started by a fresh helper
//! (this benchmark binary again, as `baton-bench transcripts-child`) that reaps only that one
//! child and writes its figures to a file. The helper passes its environment on unchanged, so
//! the caller's `env_clear` reaches the measured process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::resource::{UsageWho, getrusage};

/// The benchmark's first argument that turns it into the helper.
pub const CHILD_COMMAND: &str = "transcripts-child";

/// One finished process.
pub struct Measured {
    pub wall: Duration,
    pub peak_rss_bytes: u64,
    pub stdout: Vec<u8>,
}

/// Runs `program args` under the helper with exactly `env` as its environment and waits for it;
/// a failing exit is an error carrying its stderr.
pub fn measure(
    program: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
    report: &Path,
) -> anyhow::Result<Measured> {
    let helper = std::env::current_exe()?;
    let output = Command::new(helper)
        .arg(CHILD_COMMAND)
        .arg(report)
        .arg(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(key, value)| (key, value.as_os_str())))
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting the helper for {}", program.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(
        output.status.success(),
        "{} {} failed ({}): {}",
        program.display(),
        args.join(" "),
        output.status,
        stderr.trim()
    );
    let figures = fs::read_to_string(report)?;
    let mut fields = figures.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(wall_nanos)), Some(Ok(peak_rss_kib))) = (fields.next(), fields.next()) else {
        anyhow::bail!("the helper's report is unreadable: {figures:?}");
    };
    fs::remove_file(report)?;
    Ok(Measured {
        wall: Duration::from_nanos(wall_nanos),
        peak_rss_bytes: peak_rss_kib * 1024,
        stdout: output.stdout,
    })
}

/// The helper: `<report> <program> [args…]`. Runs the program with inherited stdio, then writes
/// `<wall nanoseconds> <peak RSS KiB>` to the report file and exits as the program did.
pub fn child_main(args: Vec<String>) -> anyhow::Result<()> {
    let [report, program, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: baton-bench {CHILD_COMMAND} <report> <program> [args...]");
    };
    let started = Instant::now();
    let status = Command::new(program)
        .args(rest)
        .status()
        .with_context(|| format!("starting {program}"))?;
    let wall = started.elapsed();
    // ru_maxrss is in KiB on Linux; with one reaped child it is that child's own peak.
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    fs::write(
        PathBuf::from(report),
        format!("{} {}", wall.as_nanos(), usage.max_rss()),
    )?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
