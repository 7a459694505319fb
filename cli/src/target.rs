//! The services a command names: the ones `baton serve` runs, the contexts `baton migrate
//! --check` checks.

/// Which services this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    All,
    Registry,
    Provenance,
    Triage,
    Closer,
    Usage,
    Notify,
    Gateway,
}
