//! Tokens: the operator's admin token and one token per admitted tenant. The service stores
//! only their SHA-256 digests; a request carries the token as `Authorization: Bearer TOKEN`.

use rand::RngCore;
use sha2::{Digest, Sha256};

/// A fresh random token: `tb_` and 64 hex digits (256 bits from the OS).
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("tb_{}", hex(&bytes))
}

/// The SHA-256 digest of `token`, in hex (what the database keeps).
pub fn digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Whether `token` hashes to `stored` (compared in time independent of where they differ).
pub fn matches(token: &str, stored: &str) -> bool {
    let d = digest(token);
    d.len() == stored.len()
        && d.bytes()
            .zip(stored.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The bearer token of an `Authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_its_digest_only() {
        let t = new_token();
        assert!(t.starts_with("tb_") && t.len() == 67, "{t}");
        assert_ne!(t, new_token());
        let d = digest(&t);
        assert!(matches(&t, &d));
        assert!(!matches(&new_token(), &d));
        assert!(!matches(&t, "abc"));
        // the known SHA-256 of "abc"
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn bearer_reads_the_scheme_case_insensitively() {
        assert_eq!(bearer("Bearer tb_x"), Some("tb_x"));
        assert_eq!(bearer("bearer  tb_x "), Some("tb_x"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
    }
}
