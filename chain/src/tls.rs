//! TLS for HTTPS endpoints: reqwest's rustls with ring as the process's crypto provider (decision
//! 0906). reqwest is built with `rustls-no-provider`, so a provider must be installed before the
//! first HTTP client is made; [`install_crypto_provider`] does that once per process.

/// Installs ring as rustls's process-wide crypto provider, unless one is installed already (by
/// this function or by the embedding program). Idempotent and cheap; call it before building an
/// HTTP client that may speak TLS.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race; either way a provider is installed afterwards.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_provider_is_installed_and_an_https_client_builds() {
        super::install_crypto_provider();
        super::install_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        alloy::transports::http::reqwest::Client::builder().build().expect("a TLS-capable client builds");
    }
}
