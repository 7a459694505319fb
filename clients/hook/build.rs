//! Links the `baton-hook` binary as a position-dependent executable (issue 25).
//!
//! The hook is a process the harness starts at every turn end, on the user's critical path.
//! As a PIE it carried ~35,000 relative relocations that the dynamic loader applied at each
//! start, touching (and copying) hundreds of pages: about 2.5 ms of a 3.5 ms start on the
//! reference machine, more than the heartbeat's whole round trip. Linked `-no-pie`, those
//! addresses are fixed at link time and the start is the loader's symbol binding only. The
//! price is address-space layout randomisation of this short-lived client's image (its heap,
//! stack and libraries stay randomised); it runs no server and parses only its own harness's
//! JSON with memory-safe code.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=baton-hook=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
