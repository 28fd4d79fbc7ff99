//! `vestibule siwx verify`: verify a signed sign-in message from the command line and print a JSON
//! verdict. The binary's clap tree embeds [`SiwxVerifyArgs`] and calls [`run_verify`].

use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};
use vestibule_actors::siwx::verify::decode_signature;
use vestibule_actors::siwx::{ParseErrorKind, SiwxMessage, Timestamp, VerifyError, VerifyPolicy};

use super::eip1271::Eip1271Checker;
use super::verify::{SiwxError, verify_message};

/// Arguments of `vestibule siwx verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct SiwxVerifyArgs {
    /// File holding the exact message text that was signed (UTF-8, LF line ends, no final line feed).
    #[arg(long, value_name = "FILE")]
    pub message: PathBuf,
    /// The signature: hex, with or without 0x (for a Solana message also base58).
    #[arg(long, value_name = "HEX")]
    pub signature: String,
    /// The domain the message must name (RFC 3986 authority, as `app.example` or `localhost:8080`).
    #[arg(long, value_name = "D")]
    pub domain: Option<String>,
    /// The nonce the message must carry.
    #[arg(long, value_name = "N")]
    pub nonce: Option<String>,
    /// Judge the message's times at this instant (RFC 3339) instead of now.
    #[arg(long, value_name = "RFC3339")]
    pub at: Option<String>,
    /// JSON-RPC endpoint (http or https) for EIP-1271 contract-account signatures.
    #[arg(long, value_name = "URL")]
    pub rpc: Option<String>,
    /// The origin the message's URI must have (`https://app.example`).
    #[arg(long, value_name = "ORIGIN")]
    pub uri_origin: Option<String>,
    /// The scheme the message must be for (`https` is assumed when the message has none).
    #[arg(long, value_name = "SCHEME")]
    pub scheme: Option<String>,
    /// A CAIP-2 chain the account may be on (`eip155:1`, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`); repeat for several.
    #[arg(long = "chain", value_name = "CAIP2")]
    pub chains: Vec<String>,
    /// How many seconds `Issued At` may be ahead of the clock.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub skew_secs: u32,
    /// How many seconds old `Issued At` may be (no limit when absent).
    #[arg(long, value_name = "SECONDS")]
    pub max_age_secs: Option<u32>,
}

impl SiwxVerifyArgs {
    /// The arguments for `--message FILE --signature SIG` alone, with the command-line defaults
    /// for everything else (no bindings, 60 s issued-at skew, no RPC).
    pub fn new(message: impl Into<PathBuf>, signature: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            signature: signature.into(),
            domain: None,
            nonce: None,
            at: None,
            rpc: None,
            uri_origin: None,
            scheme: None,
            chains: Vec::new(),
            skew_secs: 60,
            max_age_secs: None,
        }
    }

    fn policy(&self, now: OffsetDateTime) -> VerifyPolicy {
        let mut p = VerifyPolicy::new(now);
        p.expected_domain = self.domain.clone();
        p.expected_nonce = self.nonce.clone();
        p.expected_uri_origin = self.uri_origin.clone();
        p.expected_scheme = self.scheme.clone();
        p.allowed_chains = (!self.chains.is_empty()).then(|| self.chains.clone());
        p.max_issued_at_skew = Some(Duration::seconds(i64::from(self.skew_secs)));
        p.max_age = self.max_age_secs.map(|s| Duration::seconds(i64::from(s)));
        p
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    Timestamp::from_datetime(t).to_string()
}

/// Verifies the message and returns the JSON verdict and the process exit code: 0 when valid,
/// 1 when not. An `Err` is a usage or I/O problem (unreadable file, bad `--at` or `--rpc`), for
/// which the caller should exit with 2.
///
/// The verdict: `valid`, `reason` (`null`, or `{code, message}` with the stable code of the check
/// that failed), `method` (`eip191`, `eip1271`, `ed25519`), `account` (CAIP-10), `at`, `unchecked`
/// (bindings not asked for), and `fields` (the parsed message, when it parses).
pub async fn run_verify(args: &SiwxVerifyArgs) -> anyhow::Result<(Value, i32)> {
    let bytes = std::fs::read(&args.message).with_context(|| format!("reading {}", args.message.display()))?;
    let now = match &args.at {
        Some(at) => Timestamp::parse(at.as_str()).map_err(|e| anyhow::anyhow!("--at {at:?}: {e}"))?.at(),
        None => OffsetDateTime::now_utc(),
    };
    let checker = args.rpc.as_deref().map(Eip1271Checker::new).transpose().context("--rpc")?;
    let policy = args.policy(now);

    let invalid = |code: &str, message: String, fields: Value| {
        let verdict = json!({
            "valid": false,
            "reason": { "code": code, "message": message },
            "method": null,
            "account": null,
            "at": rfc3339(now),
            "unchecked": policy.unchecked(),
            "fields": fields,
        });
        (verdict, 1)
    };

    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(invalid("malformed_message", "the message file is not UTF-8".into(), Value::Null));
    };
    let parsed = match SiwxMessage::parse(&text) {
        Ok(m) => m,
        Err(e) => {
            let mut message = VerifyError::from(e.clone()).to_string();
            if e.kind == ParseErrorKind::Unexpected && text.ends_with('\n') {
                message.push_str(
                    " (the file ends with a line feed; a sign-in message does not, so the file must hold \
                     exactly the signed text)",
                );
            }
            return Ok(invalid("malformed_message", message, Value::Null));
        }
    };
    let fields = serde_json::to_value(parsed.to_fields())?;
    let Some(signature) = decode_signature(&args.signature, parsed.namespace()) else {
        let what = "the signature is neither hex nor (for Solana) base58";
        return Ok(invalid("malformed_signature", what.into(), fields));
    };

    match verify_message(&text, &signature, &policy, checker.as_ref()).await {
        Ok(v) => Ok((
            json!({
                "valid": true,
                "reason": null,
                "method": v.method,
                "account": v.message.account.caip10(),
                "at": rfc3339(now),
                "unchecked": v.unchecked,
                "fields": fields,
            }),
            0,
        )),
        Err(e) => {
            let (mut verdict, code) = invalid(e.code(), e.to_string(), fields);
            verdict["account"] = json!(parsed.account.caip10());
            if let SiwxError::Rejected(VerifyError::SignatureMismatch { recovered: Some(r), .. }) = &e {
                verdict["reason"]["recovered"] = json!(r);
            }
            Ok((verdict, code))
        }
    }
}
