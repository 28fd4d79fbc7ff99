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
