//! `vestibule-codegen [--out DIR] [--check]`: writes the client's generated TypeScript, or checks that
//! the checked-in files are current (exit 1 naming the stale ones).

use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "vestibule-codegen",
    version,
    about = "Regenerate the client's TypeScript definitions and statecharts from the Rust types"
)]
struct Args {
    /// Output directory.
    #[arg(long, default_value = "client/src/generated")]
    out: PathBuf,
    /// Only check that the directory is current; exit 1 if not.
    #[arg(long)]
    check: bool,
}

fn main() -> anyhow::Result<()> {
    let Args { out, check } = Args::parse();
    if check {
        let stale = vestibule_codegen::stale(&out)?;
        if stale.is_empty() {
            println!("{} is current", out.display());
            return Ok(());
        }
        eprintln!("{} is stale: {}; run `cargo run -p vestibule-codegen`", out.display(), stale.join(", "));
        std::process::exit(1);
    }
    let n = vestibule_codegen::write(&out)?;
    println!("wrote {n} files to {}", out.display());
    Ok(())
}
