//! The probe's message format: every request and reply starts with a 16-byte header
//! (little-endian `magic: u32`, `len: u32` = whole message length including the header,
//! `seq: u64`), followed by filler up to `len`. The server echoes each message unchanged, so a
//! reply has the request's size and sequence number. UDP servers are reached through a
//! handshake datagram (`HELLO`) answered (`WELCOME`) from a socket dedicated to that client.

/// Header length [bytes]; also the smallest message.
pub const HEADER_BYTES: usize = 16;
/// Magic of a request/reply.
pub const DATA: u32 = 0x7462_7072;
/// Magic of a UDP handshake request.
pub const HELLO: u32 = 0x7462_6869;
/// Magic of a UDP handshake answer.
pub const WELCOME: u32 = 0x7462_7765;
/// Largest message a server accepts [bytes].
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    pub len: u32,
    pub seq: u64,
}

impl Header {
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&self.magic.to_le_bytes());
        buf[4..8].copy_from_slice(&self.len.to_le_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_le_bytes());
    }

    /// Reads a header; `None` when `buf` is shorter than one.
    pub fn read(buf: &[u8]) -> Option<Header> {
        let b = buf.get(..HEADER_BYTES)?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&b[8..16]);
        Some(Header {
            magic: u32_at(0),
            len: u32_at(4),
            seq: u64::from_le_bytes(seq),
        })
    }

    /// A data header whose length a server can accept.
    pub fn valid_data(&self) -> bool {
        self.magic == DATA && (HEADER_BYTES..=MAX_MESSAGE_BYTES).contains(&(self.len as usize))
    }
}

/// A message buffer of `size` bytes with a data header for sequence 0 and a filler pattern.
pub fn message(size: usize) -> Vec<u8> {
    let mut buf: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    Header {
        magic: DATA,
        len: size as u32,
        seq: 0,
    }
    .write(&mut buf);
    buf
}

/// Overwrites the sequence number of a message in place.
#[inline]
pub fn set_seq(buf: &mut [u8], seq: u64) {
    buf[8..16].copy_from_slice(&seq.to_le_bytes());
}

/// The sequence number of a message (`buf` holds at least a header).
#[inline]
pub fn seq_of(buf: &[u8]) -> u64 {
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&buf[8..16]);
    u64::from_le_bytes(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_validates() {
        let mut m = message(64);
        set_seq(&mut m, 42);
        let h = Header::read(&m).unwrap();
        assert_eq!((h.magic, h.len, h.seq), (DATA, 64, 42));
        assert!(h.valid_data());
        assert_eq!(seq_of(&m), 42);
        assert!(Header::read(&m[..15]).is_none());
        let bad = Header { len: 8, ..h };
        assert!(!bad.valid_data());
        let hello = Header { magic: HELLO, ..h };
        assert!(!hello.valid_data());
    }
}
