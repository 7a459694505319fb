//! The two measured commands: ccusage's native binary (the baseline, from npm) and the release
//! `baton-hook`. Each runs with a cleared environment holding only a scratch `HOME` and the
//! corpus root, so neither reads real transcripts or settings of whoever runs the benchmark.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::Value;

use super::measure::{Measured, measure};

pub const CCUSAGE_VERSION: &str = "20.0.24";
/// A folder earlier sessions installed the harnesses into; reused when it holds the version.
const HARNESS_FOLDER: &str = "/var/tmp/baton-harness";
const CCUSAGE_BINARY: &str = "node_modules/@ccusage/ccusage-linux-x64/bin/ccusage";

/// The ccusage binary: the harness folder's when it is the pinned version, else a fresh npm
/// install into `scratch`; the inner `Err` is why there is no baseline (npm is absent).
pub fn ccusage(scratch: &Path) -> anyhow::Result<Result<PathBuf, String>> {
    let reused = Path::new(HARNESS_FOLDER).join(CCUSAGE_BINARY);
    if reused.is_file() && version(&reused).as_deref() == Some(CCUSAGE_VERSION) {
        return Ok(Ok(reused));
    }
    let npm_present = Command::new("npm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !npm_present {
        return Ok(Err("npm is absent".to_string()));
    }
    let folder = scratch.join("ccusage");
    std::fs::create_dir_all(&folder)?;
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&folder)
        .arg(format!("ccusage@{CCUSAGE_VERSION}"))
        .stdout(Stdio::null())
        .status()
        .context("npm install")?;
    anyhow::ensure!(
        status.success(),
        "npm install ccusage@{CCUSAGE_VERSION}: {status}"
    );
    let binary = folder.join(CCUSAGE_BINARY);
    anyhow::ensure!(
        binary.is_file(),
        "{} is missing after npm install",
        binary.display()
    );
    // npm may unpack the platform binary without its execute bit.
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    Ok(Ok(binary))
}

fn version(binary: &Path) -> Option<String> {
    let output = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    text.split_whitespace().last().map(str::to_string)
}

/// Scratch folders the measured processes see.
pub struct Scratch {
    /// An empty home for ccusage.
    pub home: PathBuf,
    /// Where the helper writes each run's figures.
    pub report: PathBuf,
}

/// One measured report and its parsed JSON.
pub struct Report {
    pub measured: Measured,
    pub json: Value,
}

fn parsed(measured: Measured, who: &str) -> anyhow::Result<Report> {
    let json = serde_json::from_slice(&measured.stdout).with_context(|| {
        let head = String::from_utf8_lossy(&measured.stdout[..measured.stdout.len().min(300)])
            .into_owned();
        format!("{who} printed no JSON: {head:?}")
    })?;
    Ok(Report { measured, json })
}

/// `ccusage daily --json --offline --mode calculate --timezone UTC` over the corpus.
pub fn ccusage_daily(binary: &Path, corpus: &Path, scratch: &Scratch) -> anyhow::Result<Report> {
    let args = [
        "daily",
        "--json",
        "--offline",
        "--mode",
        "calculate",
        "--timezone",
        "UTC",
    ];
    let env = [
        ("HOME", scratch.home.as_path()),
        ("CLAUDE_CONFIG_DIR", corpus),
    ];
    parsed(measure(binary, &args, &env, &scratch.report)?, "ccusage")
}

/// `baton-hook usage daily --json --timezone UTC` over the corpus, its checkpoints in `state`
/// (a fresh folder makes a cold run).
pub fn baton_daily(
    binary: &Path,
    corpus: &Path,
    state: &Path,
    scratch: &Scratch,
) -> anyhow::Result<Report> {
    // A home of its own per state folder, so nothing Baton might keep under HOME warms a run
    // that is meant to be cold.
    let mut home = state.as_os_str().to_owned();
    home.push("-home");
    let home = PathBuf::from(home);
    std::fs::create_dir_all(state)?;
    std::fs::create_dir_all(&home)?;
    let args = ["usage", "daily", "--json", "--timezone", "UTC"];
    let env = [
        ("HOME", home.as_path()),
        ("CLAUDE_CONFIG_DIR", corpus),
        ("BATON_HOOK_HOME", state),
    ];
    parsed(measure(binary, &args, &env, &scratch.report)?, "baton-hook")
}
