//! SessionEnd runs while its client exits, and two signals can cut it short between its
//! appends: the harness's own timeout (Gemini CLI sends SIGTERM to a hook that outlives its
//! `timeout`, SIGKILL five seconds later) and the hang-up the terminal sends its foreground
//! process group once the client that led it has gone (`/quit` in an interactive Gemini CLI or
//! Claude Code in a terminal that closes with it). On a loaded machine three durable appends
//! can take longer than the one second SessionEnd is given, and a close cut off there is a
//! session that never ends. So SessionEnd catches both signals for the rest of its short run
//! and finishes its appends; SIGKILL still ends it.
//!
//! A handler, not "ignore": an ignored signal stays ignored across `exec`, and the detached
//! drain this process starts must stay stoppable. A caught one is reset for the child.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGHUP, SIGTERM};

/// Raised for the rest of the process: whether a shielded signal arrived.
pub struct Shield {
    arrived: Arc<AtomicBool>,
}

impl Shield {
    /// Catches SIGTERM and SIGHUP from now on. A registration that fails leaves that signal's
    /// default in place (nothing else to do about it in a hook).
    pub fn raise() -> Shield {
        let arrived = Arc::new(AtomicBool::new(false));
        for signal in [SIGTERM, SIGHUP] {
            let _ = signal_hook::flag::register(signal, Arc::clone(&arrived));
        }
        Shield { arrived }
    }

    /// Whether a shielded signal arrived while the shield was up.
    pub fn outlived_a_signal(&self) -> bool {
        self.arrived.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shielded_signal_is_caught_and_recorded_not_fatal() {
        let shield = Shield::raise();
        assert!(!shield.outlived_a_signal());
        signal_hook::low_level::raise(SIGTERM).expect("raise");
        assert!(shield.outlived_a_signal(), "the process lives on and knows");
    }
}
