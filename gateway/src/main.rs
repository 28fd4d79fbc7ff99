use clap::Parser;

fn main() {
    let cli = vestibule_gateway::cli::Cli::parse();
    match vestibule_gateway::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("vestibule: {e:#}");
            // 1 means "checked and found wanting" (e.g. an invalid signature); 2 is a usage or I/O error.
            std::process::exit(2);
        }
    }
}
