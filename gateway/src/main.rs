use clap::Parser;

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
