use clap::Parser;

fn main() {
    let cli = vestibule_gateway::cli::Cli::parse();
    match vestibule_gateway::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("vestibule: {e:#}");
            std::process::exit(1);
        }
    }
}
