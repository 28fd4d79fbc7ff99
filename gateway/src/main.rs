use clap::Parser;

// mimalloc instead of glibc's malloc: about a quarter of the gateway's CPU under load was glibc's
// allocator (docs/performance.md, "The allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its v2 `mimalloc.h`; libmimalloc-sys names no constant for
/// it). The test below checks that this index holds the option's documented default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    // Memory freed is returned to the system at once, not "10 ms later" (which an idle thread never
    // gets to): hibernated sessions then cost what they cost with glibc's malloc.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_purge_delay_option_is_where_the_gateway_sets_it() {
        // mimalloc's documented default purge delay is 10 ms; a wrong index would read another option.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) }, 10);
        unsafe { libmimalloc_sys::mi_option_set(super::MI_OPTION_PURGE_DELAY, 0) };
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) }, 0);
    }
}
