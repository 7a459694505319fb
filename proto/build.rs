//! Compiles `baton/**/*.proto` with protox (pure Rust; no system protoc) and generates tonic
//! clients and servers. The encoded descriptor set is kept for gRPC reflection.

use std::path::PathBuf;

use prost::Message;

const PROTOS: &[&str] = &[
    "baton/common/v1/common.proto",
    "baton/registry/v1/registry.proto",
    "baton/provenance/v1/provenance.proto",
    "baton/triage/v1/triage.proto",
    "baton/closer/v1/closer.proto",
    "baton/usage/v1/usage.proto",
    "baton/notify/v1/notify.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=baton");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = protox::compile(PROTOS, ["."])?;
    std::fs::write(
        out_dir.join("baton_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
