//! Frames: the unit of one group commit, and of torn-write detection.
//!
//! ```text
//! u32 BE length of the records (never 0: a length of 0 is the end of the data)
//! u32 BE CRC-32C of the length's 4 bytes followed by the records
//! ...    records (see `record.rs`)
//! ```
//!
//! The CRC covers the length too, so a corrupted length is caught like a corrupted record.

/// Bytes before a frame's records.
pub(crate) const HEADER_LEN: usize = 8;

/// A frame under construction: the header is reserved at the front and filled in by [`seal`].
pub(crate) fn new_frame(capacity: usize) -> Vec<u8> {
    let mut frame = Vec::with_capacity(HEADER_LEN + capacity);
    frame.resize(HEADER_LEN, 0);
    frame
}

/// Whether a frame holds no record yet.
pub(crate) fn is_empty(frame: &[u8]) -> bool {
    frame.len() <= HEADER_LEN
}

/// Fills in the header of a frame built with [`new_frame`]. The caller keeps frames below 4 GiB.
pub(crate) fn seal(frame: &mut [u8]) {
    let len = u32::try_from(frame.len() - HEADER_LEN).unwrap_or(u32::MAX).to_be_bytes();
    let crc = checksum(len, &frame[HEADER_LEN..]);
    frame[..4].copy_from_slice(&len);
    frame[4..HEADER_LEN].copy_from_slice(&crc.to_be_bytes());
}

fn checksum(len: [u8; 4], records: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&len), records)
}

/// The header of a frame as read: its length and the CRC it claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub len: u32,
    pub crc: u32,
}

impl Header {
    pub(crate) fn parse(bytes: &[u8; HEADER_LEN]) -> Self {
        let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let crc = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        Self { len, crc }
    }

    /// A zero length marks the end of the data (the zero-filled, preallocated rest of a segment).
    pub(crate) fn is_end(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn matches(&self, records: &[u8]) -> bool {
        checksum(self.len.to_be_bytes(), records) == self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_frame_checks_and_any_flipped_bit_fails() {
        let mut frame = new_frame(16);
        assert!(is_empty(&frame));
        frame.extend_from_slice(b"some records");
        seal(&mut frame);
        let header = Header::parse(frame[..HEADER_LEN].try_into().unwrap());
        assert_eq!(header.len, 12);
        assert!(header.matches(&frame[HEADER_LEN..]));
        for i in 0..frame.len() {
            for bit in 0..8 {
                let mut bad = frame.clone();
                bad[i] ^= 1 << bit;
                let h = Header::parse(bad[..HEADER_LEN].try_into().unwrap());
                let body = bad.get(HEADER_LEN..HEADER_LEN + h.len as usize).unwrap_or(&[]);
                assert!(!h.matches(body) || h.len as usize != body.len(), "byte {i} bit {bit}");
            }
        }
    }
}
