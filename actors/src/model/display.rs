//! The numbers the widget draws with (spec sections 2, 5 and 9). The server decides nothing with
//! them; they live here so the widget's views read them from the generated `constants.ts` instead
//! of keeping a second copy.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Display {
    pub modal_width_px: u32,
    pub modal_z_index: u32,
    pub view_transition_ms: u32,
    pub header_transition_ms: u32,
    pub height_transition_ms: u32,
    pub toast_width_px: u32,
    pub toast_gap_px: u32,
    /// Addresses show this many characters from the start ...
    pub address_head_chars: usize,
    /// ... and this many from the end.
    pub address_tail_chars: usize,
    /// A longer email is truncated.
    pub max_email_chars: usize,
}

pub const DISPLAY: Display = Display {
    modal_width_px: 360,
    modal_z_index: 999,
    view_transition_ms: 150,
    header_transition_ms: 120,
    height_transition_ms: 150,
    toast_width_px: 356,
    toast_gap_px: 14,
    address_head_chars: 4,
    address_tail_chars: 6,
    max_email_chars: 30,
};

/// Whether `c` may not be in a text the widget shows from someone it cannot vouch for (a wallet's
/// announced name): control characters, white space other than the space (padding that pushes the
/// rest out of view, line breaks), and what is drawn as nothing or reorders the text around it:
/// bidirectional marks, embeddings, overrides and isolates ("\u{202E}ksaMateM" reads "MetaMask"),
/// zero-width characters, fillers, variation selectors, tag characters, private-use and
/// non-characters. The same set as the chain crate's `erc20::token_text` (token names and
/// symbols), which is kept apart only because that crate does not depend on this one.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFF}'
            | '\u{E000}'..='\u{F8FF}' | '\u{FDD0}'..='\u{FDEF}' | '\u{E0000}'..='\u{E0FFF}'
            | '\u{F0000}'..='\u{10FFFF}')
}

#[cfg(test)]
mod tests {
    use super::is_hidden;

    #[test]
    fn letters_digits_punctuation_and_the_space_show_and_what_reorders_or_hides_text_does_not() {
        assert!(!"Rabby Wallet 2 (beta) — Zoë 日本 ✔".chars().any(is_hidden));
        for c in [
            '\u{202E}',
            '\u{2066}',
            '\u{200B}',
            '\u{200D}',
            '\u{FEFF}',
            '\u{0000}',
            '\u{001B}',
            '\u{0085}',
            '\u{2003}',
            '\u{2028}',
            '\u{FE0F}',
            '\u{E0041}',
            '\u{E000}',
        ] {
            assert!(is_hidden(c), "{:?}", c);
        }
    }
}
