//! Baton's wire contracts between services: one module per `baton.<context>.v1` package.
//!
//! Services never depend on each other's crates; they meet here, through these generated
//! clients and servers.

/// Messages shared by several contexts.
pub mod common {
    pub mod v1 {
        tonic::include_proto!("baton.common.v1");
    }
}

/// The session-registry context.
pub mod registry {
    pub mod v1 {
        tonic::include_proto!("baton.registry.v1");
    }
}

/// The provenance context.
pub mod provenance {
    pub mod v1 {
        tonic::include_proto!("baton.provenance.v1");
    }
}

/// The triage context.
pub mod triage {
    pub mod v1 {
        tonic::include_proto!("baton.triage.v1");
    }
}

/// The closer context.
pub mod closer {
    pub mod v1 {
        tonic::include_proto!("baton.closer.v1");
    }
}

/// The usage context.
pub mod usage {
    pub mod v1 {
        tonic::include_proto!("baton.usage.v1");
    }
}

/// The notify context.
pub mod notify {
    pub mod v1 {
        tonic::include_proto!("baton.notify.v1");
    }
}

pub mod messages;

/// The protobuf timestamp type every context uses.
pub use prost_types::Timestamp;

/// Encoded `FileDescriptorSet` of every Baton proto, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/baton_descriptor.bin"));
