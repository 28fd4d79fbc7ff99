use clap::Parser;

// mimalloc instead of glibc's malloc: about a quarter of the gateway's CPU under load was glibc's
// allocator (docs/performance.md, "The allocator"). Its default purge delay is kept: purging freed
// memory at once cost a few per cent of CPU per command and no longer saves idle memory
// (docs/performance.md, "The allocator's purge delay, again").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = vestibule_gateway::cli::Cli::parse();
    match vestibule_gateway::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        // `vestibule replay … | head` closes the pipe early: that is not a failure.
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) => std::process::exit(0),
        Err(e) => {
            eprintln!("vestibule: {e:#}");
            // 1 means "checked and found wanting" (e.g. an invalid signature); 2 is a usage or I/O error.
            std::process::exit(2);
        }
    }
}
