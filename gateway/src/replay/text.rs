//! What the replay tools do to strings from a log or an export before they reach a terminal, and
//! to an export's payloads: escaping, email masking, signature redaction.

use std::borrow::Cow;

use serde_json::Value;

/// Whether a terminal could act on `c` rather than show it: C0 and C1 controls and DEL (escape
/// sequences, carriage returns and line feeds that overwrite or forge lines), and the format
/// characters that reorder or hide text (bidirectional controls, zero-width characters, line and
/// paragraph separators, tags).
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// `text` as a terminal shows it, one line: every character a terminal could act on (see
/// [`hidden`]) spelled as a JSON escape (`\u001b`, surrogate pairs above U+FFFF), so that a visitor's
/// toast, an export's project or an unknown variant's name cannot move the cursor, retitle the
/// window, reorder what follows or print a line of its own (a forged `verify ok`). JSON text stays
/// JSON: these characters only occur inside its strings, where the escape means the same.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An error message for a terminal: [`terminal_safe`], but the line breaks of a message of several
/// lines are kept. For messages whose untrusted parts were escaped where they were put in.
pub fn terminal_safe_message(text: &str) -> String {
    text.split('\n').map(|line| terminal_safe(line).into_owned()).collect::<Vec<_>>().join("\n")
}

/// Characters of an address's local part (RFC 5322's atext and dots; letters of any script).
fn local_char(c: char) -> bool {
    c.is_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c)
}

/// Characters of a domain name (letters of any script, digits, hyphens, dots).
fn domain_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '.'
}

/// `text` with the local part of every `local@domain.tld` in it replaced by `***`, wherever it
/// stands (between commas, tabs, line breaks, brackets or quotes); every other character is kept.
/// A domain is one with a dot inside it (a sentence's full stop after it is not part of it).
pub fn mask_emails_in(text: &str) -> Cow<'_, str> {
    if !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0; // byte offset of text copied to out
    for (i, &(at, c)) in chars.iter().enumerate() {
        if c != '@' || at < copied {
            continue;
        }
        let mut start = i;
        while start > 0 && local_char(chars[start - 1].1) {
            start -= 1;
        }
        let mut end = i + 1;
        while end < chars.len() && domain_char(chars[end].1) {
            end += 1;
        }
        // Trailing dots and hyphens end a sentence or a clause, not the domain.
        while end > i + 1 && matches!(chars[end - 1].1, '.' | '-') {
            end -= 1;
        }
        let domain: String = chars[i + 1..end].iter().map(|&(_, c)| c).collect();
        let local_start = chars[start].0;
        if start == i || local_start < copied || domain.starts_with('.') || !domain.contains('.') {
            continue;
        }
        out.push_str(&text[copied..local_start]);
        out.push_str("***");
        copied = at;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Masks every string in `value` (see [`mask_emails_in`]); whether anything changed.
pub fn mask_emails(value: &mut Value) -> bool {
    match value {
        Value::String(s) => match mask_emails_in(s) {
            Cow::Owned(masked) => {
                *s = masked;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |c, v| mask_emails(v) || c),
        Value::Object(map) => map.values_mut().fold(false, |c, v| mask_emails(v) || c),
        _ => false,
    }
}

/// What `export` writes in place of a signature (without `--keep-signatures`). A string, so every
/// event still decodes on import and replays; the state it folds to is not the one clients were
/// sent, so hashes are dropped from there on, as for masked emails.
pub const REDACTED: &str = "[redacted by vestibule export]";

/// Signatures in the events of one session, tracked across it: which wallet and host requests ask
/// for one, so that their answers are redacted too.
#[derive(Default)]
pub struct Redactor {
    signing_requests: std::collections::HashSet<String>,
}

impl Redactor {
    /// Replaces the signatures `payload` (of an event of type `event_type`) carries with
    /// [`REDACTED`]: a sign-in's signature and CACAO (a signed sign-in message is a bearer proof
    /// until it expires: its holder could sign in as the visitor wherever the message is accepted),
    /// the signature of a contract account's check, a signed Solana transaction, and the answer of
    /// every wallet or host request that asked for a signature. Whether anything changed.
    pub fn redact(&mut self, event_type: &str, payload: &mut Value) -> bool {
        let mut changed = false;
        let mut replace = |slot: Option<&mut Value>| {
            if let Some(v) = slot
                && !v.is_null()
                && *v != Value::String(REDACTED.into())
            {
                *v = Value::String(REDACTED.into());
                changed = true;
            }
        };
        match event_type {
            "SiwxSignedIn" => {
                replace(payload.pointer_mut("/session/signature"));
                replace(payload.pointer_mut("/session/cacao"));
            }
            "SiwxContractCheckStarted" => replace(payload.pointer_mut("/signature")),
            "SolanaTransferSigned" => replace(payload.pointer_mut("/signed")),
            "WalletRequestIssued" => {
                let kind = &payload["request"]["kind"];
                let signs = match kind["type"].as_str() {
                    Some("signMessage" | "signTransaction") => true,
                    Some("rpc") => kind["method"].as_str().is_some_and(asks_for_a_signature),
                    _ => false,
                };
                if signs && let Some(id) = payload["request"]["id"].as_str() {
                    self.signing_requests.insert(format!("w:{id}"));
                }
            }
            "HostRequestReceived" => {
                if payload["request"]["method"].as_str().is_some_and(asks_for_a_signature)
                    && let Some(id) = payload["request"]["id"].as_str()
                {
                    self.signing_requests.insert(format!("h:{id}"));
                }
            }
            "WalletRequestSettled" | "HostRequestSettled" => {
                let prefix = if event_type == "WalletRequestSettled" { "w" } else { "h" };
                if payload["id"].as_str().is_some_and(|id| self.signing_requests.contains(&format!("{prefix}:{id}"))) {
                    replace(payload.pointer_mut("/outcome/result"));
                }
            }
            _ => {}
        }
        changed
    }
}

/// Whether a wallet method's answer is a signature (or a signed transaction): `personal_sign`,
/// `eth_sign`, `eth_signTypedData*`, `eth_signTransaction`, `solana_signMessage`, ...
fn asks_for_a_signature(method: &str) -> bool {
    method.to_ascii_lowercase().contains("sign")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_address_is_masked_and_nothing_else_changes() {
        let cases = [
            ("ada@example.com,bob@example.org", "***@example.com,***@example.org"),
            (
                "mail\ncarol@example.com\tdave@example.com <erin@example.com> (frank@example.com)",
                "mail\n***@example.com\t***@example.com <***@example.com> (***@example.com)",
            ),
            ("write to bob@mail.example.org now.", "write to ***@mail.example.org now."),
            ("ends at grace@example.com.", "ends at ***@example.com."),
            ("\"ada.lovelace+x@example.co.uk\"", "\"***@example.co.uk\""),
            ("@handle a@b  two  spaces", "@handle a@b  two  spaces"),
            ("no address", "no address"),
        ];
        for (text, masked) in cases {
            assert_eq!(mask_emails_in(text), masked, "{text:?}");
        }
    }

    #[test]
    fn characters_a_terminal_acts_on_are_escaped() {
        assert_eq!(terminal_safe("plain ü"), "plain ü");
        assert_eq!(terminal_safe("\u{1b}[2J\r\nverify ok\u{7f}\u{9b}"), "\\u001b[2J\\u000d\\u000averify ok\\u007f\\u009b");
        assert_eq!(terminal_safe("a\u{202e}b\u{200b}c\u{E0041}"), "a\\u202eb\\u200bc\\udb40\\udc41");
        let json = serde_json::to_string(&json!({ "m": "x\u{202e}\u{9b}y" })).unwrap();
        let back: Value = serde_json::from_str(&terminal_safe(&json)).unwrap();
        assert_eq!(back, json!({ "m": "x\u{202e}\u{9b}y" }), "escaped JSON is the same JSON");
    }
}
