//! Process shutdown: SIGTERM (what Kubernetes sends) as well as Ctrl-C, fanned out to every
//! server in the process through a watch channel.

use tokio::sync::watch;

/// A cloneable shutdown signal: resolves once the process is asked to stop.
#[derive(Debug, Clone)]
pub struct Shutdown {
    receiver: watch::Receiver<bool>,
}

/// The sending half: `trigger` asks every [`Shutdown`] to resolve.
#[derive(Debug)]
pub struct ShutdownTrigger {
    sender: watch::Sender<bool>,
}

impl ShutdownTrigger {
    pub fn trigger(&self) {
        let _ = self.sender.send(true);
    }
}

/// A fresh signal pair.
pub fn channel() -> (ShutdownTrigger, Shutdown) {
    let (sender, receiver) = watch::channel(false);
    (ShutdownTrigger { sender }, Shutdown { receiver })
}

impl Shutdown {
    /// A signal that never fires (tests and embedded servers that live as long as the process).
    pub fn never() -> Shutdown {
        let (trigger, shutdown) = channel();
        // The sender must outlive every receiver: a dropped trigger reads as "stop".
        std::mem::forget(trigger);
        shutdown
    }

    /// Resolves when shutdown was triggered (or the trigger was dropped).
    pub async fn wait(mut self) {
        let _ = self.receiver.wait_for(|stopped| *stopped).await;
    }

    /// Whether shutdown has already been asked for.
    pub fn is_triggered(&self) -> bool {
        *self.receiver.borrow()
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn os_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
