//! Bakes the git commit and build time into the binary for `GET /v1/version`, and generates the
//! PSM gRPC stubs from `proto/` (protox parses them, so no system `protoc` is needed).

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FLOW_GIT_COMMIT={commit}");
    // SOURCE_DATE_EPOCH keeps reproducible builds reproducible.
    let time = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .or_else(|| {
            Command::new("date")
                .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
                .output()
                .ok()
                .and_then(|o| String::from_utf8(o.stdout).ok())
        })
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FLOW_BUILD_TIME={time}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    compile_protos()
}

/// PSM client and server stubs; the server side is what tests stand up as a fake PSM.
fn compile_protos() -> Result<(), Box<dyn std::error::Error>> {
    const PSM: &str = "proto/psm/v1/powershelf-manager.proto";
    println!("cargo:rerun-if-changed={PSM}");
    let descriptors = protox::compile([PSM], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
