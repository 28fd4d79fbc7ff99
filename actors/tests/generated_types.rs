//! The TypeScript definitions and statecharts checked in under `client/src/generated/` are exactly
//! what the Rust definitions generate. Regenerate with `cargo run -p vestibule-gateway -- codegen`.

use std::path::Path;

#[test]
fn the_checked_in_generated_client_files_are_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/src/generated");
    let stale = vestibule_actors::codegen::stale(&dir).expect("generation works");
    assert!(
        stale.is_empty(),
        "client/src/generated is stale ({}); run `cargo run -p vestibule-gateway -- codegen`",
        stale.join(", ")
    );
}
