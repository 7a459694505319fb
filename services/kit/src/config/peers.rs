//! Where callers reach each service: `BATON_<SERVICE>__ADDR`, a setting in the callee's section
//! that every caller reads. A caller declares the services it calls as a settings struct of
//! these, so each program reads (and a deployment must give it) only its own callees' addresses:
//!
//! ```
//! # use baton_kit::config::{Settings, peers::{Peer, RegistryPeer}};
//! #[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
//! #[serde(default)]
//! struct Calls {
//!     registry: RegistryPeer,
//! }
//! impl Settings for Calls {
//!     const SECTION: &'static str = "";
//! }
//! ```

use serde::{Deserialize, Serialize};

use super::values::PeerAddr;

/// One service's section as its callers see it: its address, `127.0.0.1:PORT` when unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peer<const PORT: u16> {
    /// `host:port` of the service's gRPC listener (a Kubernetes Service name in a cluster).
    pub addr: PeerAddr<PORT>,
}

impl<const PORT: u16> Peer<PORT> {
    pub fn addr(&self) -> String {
        self.addr.clone().get()
    }
}

// serde's derive does not take const generics: the section is read through a plain struct.
#[derive(Deserialize, Serialize)]
struct Section {
    addr: Option<String>,
}

impl<'de, const PORT: u16> Deserialize<'de> for Peer<PORT> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let section = Section::deserialize(deserializer)?;
        let addr = match section.addr {
            Some(text) => PeerAddr::parse(&text).map_err(serde::de::Error::custom)?,
            None => PeerAddr::default(),
        };
        Ok(Peer { addr })
    }
}

impl<const PORT: u16> Serialize for Peer<PORT> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Section {
            addr: Some(self.addr()),
        }
        .serialize(serializer)
    }
}

/// Each service's default port (DESIGN section 7), declared once here for every caller.
pub type RegistryPeer = Peer<50051>;
pub type ProvenancePeer = Peer<50052>;
pub type TriagePeer = Peer<50053>;
pub type CloserPeer = Peer<50054>;
pub type UsagePeer = Peer<50055>;
pub type NotifyPeer = Peer<50056>;
