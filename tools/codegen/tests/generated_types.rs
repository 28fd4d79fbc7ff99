//! The TypeScript definitions and statecharts checked in under `client/src/generated/` are exactly
//! what the Rust definitions generate. Regenerate with `cargo run -p vestibule-codegen`.

use std::path::Path;
use std::process::Command;

fn generated_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../client/src/generated")
}

#[test]
fn the_checked_in_generated_client_files_are_current() {
    let stale = vestibule_codegen::stale(&generated_dir()).expect("generation works");
    assert!(stale.is_empty(), "client/src/generated is stale ({}); run `cargo run -p vestibule-codegen`", stale.join(", "));
}

fn codegen(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vestibule-codegen")).args(args).output().expect("vestibule-codegen runs");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into(), String::from_utf8_lossy(&output.stderr).into())
}

#[test]
fn check_passes_on_the_checked_in_files_and_names_what_a_stale_directory_lacks() {
    let (code, stdout, stderr) = codegen(&["--check", "--out", generated_dir().to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = codegen(&["--check", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stderr.contains("RefusalCode.ts is missing"), "{stderr}");
}

#[test]
fn writing_then_checking_a_fresh_directory_is_current() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("generated");
    let (code, stdout, stderr) = codegen(&["--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("wrote "), "{stdout}");
    let (code, stdout, stderr) = codegen(&["--check", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}
