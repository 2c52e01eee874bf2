//! EyeQ's feedback on the wire: one UDP datagram of [`PAYLOAD_BYTES`] from a receiver agent to
//! the sender agent's port ([`PORT`]) on the sending host, naming the destination (the
//! receiving tenant's address) and the [`Feedback`] for it.
//!
//! Layout (network byte order): `"EQ"`, version 1, kind (1 = limit, 2 = release), the
//! destination's IPv4 address, the rate as an IEEE 754 double [bytes/s] (0 for a release).
//! 16 bytes of payload + 8 UDP + 20 IPv4 + 14 Ethernet = 58 bytes, a minimum Ethernet frame
//! ([`tailbound_shaping::eyeq::FEEDBACK_FRAME_BYTES`]) once padded on a real wire.

use std::net::Ipv4Addr;
use tailbound_shaping::eyeq::Feedback;

/// The UDP port every sender agent listens on for feedback.
pub const PORT: u16 = 7931;
/// Bytes of one feedback datagram's payload.
pub const PAYLOAD_BYTES: usize = 16;

const MAGIC: [u8; 2] = *b"EQ";
const VERSION: u8 = 1;
const LIMIT: u8 = 1;
const RELEASE: u8 = 2;

/// One feedback message: `feedback` about the destination `dest`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Message {
    /// the receiving tenant's address (the destination the sender limits)
    pub dest: Ipv4Addr,
    pub feedback: Feedback,
}

/// A datagram that is not a feedback message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not an EyeQ feedback datagram ({0}); expected 16 bytes: \"EQ\", version 1, kind 1 (limit) or 2 (release), IPv4 destination, rate f64 > 0 for a limit")]
pub struct WireError(pub String);

/// The datagram carrying `m`.
pub fn encode(m: &Message) -> [u8; PAYLOAD_BYTES] {
    let mut out = [0u8; PAYLOAD_BYTES];
    out[..2].copy_from_slice(&MAGIC);
    out[2] = VERSION;
    let (kind, rate) = match m.feedback {
        Feedback::Limit { rate } => (LIMIT, rate),
        Feedback::Release => (RELEASE, 0.0),
    };
    out[3] = kind;
    out[4..8].copy_from_slice(&m.dest.octets());
    out[8..16].copy_from_slice(&rate.to_be_bytes());
    out
}

/// The message in datagram `buf`.
///
/// # Errors
/// [`WireError`] for a wrong length, magic, version or kind, or a limit whose rate is not
/// finite and > 0.
pub fn decode(buf: &[u8]) -> Result<Message, WireError> {
    if buf.len() != PAYLOAD_BYTES {
        return Err(WireError(format!("{} bytes", buf.len())));
    }
    if buf[..2] != MAGIC || buf[2] != VERSION {
        return Err(WireError(format!(
            "header {:02x}{:02x} version {}",
            buf[0], buf[1], buf[2]
        )));
    }
    let dest = Ipv4Addr::new(buf[4], buf[5], buf[6], buf[7]);
    let mut rate = [0u8; 8];
    rate.copy_from_slice(&buf[8..16]);
    let rate = f64::from_be_bytes(rate);
    let feedback = match buf[3] {
        LIMIT if rate.is_finite() && rate > 0.0 => Feedback::Limit { rate },
        LIMIT => return Err(WireError(format!("limit with rate {rate}"))),
        RELEASE => Feedback::Release,
        k => return Err(WireError(format!("kind {k}"))),
    };
    Ok(Message { dest, feedback })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_the_wire_and_bad_datagrams_are_refused() {
        let dest = Ipv4Addr::new(10, 199, 1, 1);
        for feedback in [Feedback::Limit { rate: 6.1e6 }, Feedback::Release] {
            let m = Message { dest, feedback };
            assert_eq!(decode(&encode(&m)).unwrap(), m);
        }
        let good = encode(&Message {
            dest,
            feedback: Feedback::Limit { rate: 1.0 },
        });
        assert!(decode(&good[..15])
            .unwrap_err()
            .to_string()
            .contains("15 bytes"));
        let mut bad = good;
        bad[0] = b'X';
        assert!(decode(&bad).is_err());
        let mut bad = good;
        bad[3] = 9;
        assert!(decode(&bad).unwrap_err().to_string().contains("kind 9"));
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let mut bad = good;
            bad[8..16].copy_from_slice(&rate.to_be_bytes());
            assert!(decode(&bad).is_err(), "{rate}");
        }
    }
}
