//! Per-client request-rate limits: a token bucket per client, one set for mutating requests and
//! one for reads. A client is the token it presents (its SHA-256 digest), or its peer address
//! when it presents none. No I/O and no clock: every call takes `now` [s on any monotonic
//! clock], so the tests move time by hand.
//!
//! Memory stays bounded: at most `max_clients` buckets; a new client past that first drops the
//! buckets that are full again (they hold nothing a new bucket would not), then the one idle
//! longest.

use std::collections::HashMap;
use std::net::IpAddr;

/// Who a request counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientKey {
    /// the SHA-256 digest of the token it presented (valid or not), and the host for an
    /// agent's polls
    Token(String),
    /// the peer address of a request without a token
    Peer(IpAddr),
    /// no token and no known peer (an in-process caller)
    Unknown,
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientKey::Token(d) => write!(f, "token {}…", &d[..d.len().min(8)]),
            ClientKey::Peer(a) => write!(f, "peer {a}"),
            ClientKey::Unknown => write!(f, "an unknown client"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    tokens: f64,
    last_s: f64,
}

/// Token buckets of `per_s` requests per second and `burst` at once, one per client.
#[derive(Debug, Clone)]
pub struct RateLimits {
    per_s: f64,
    burst: f64,
    max_clients: usize,
    buckets: HashMap<ClientKey, Bucket>,
}

impl RateLimits {
    /// `per_s` > 0 and `burst` ≥ 1 (smaller values are raised to the least that works: one
    /// request at a time, at some rate).
    pub fn new(per_s: f64, burst: f64, max_clients: usize) -> RateLimits {
        RateLimits {
            per_s: if per_s.is_finite() && per_s > 0.0 {
                per_s
            } else {
                f64::MIN_POSITIVE
            },
            burst: if burst.is_finite() {
                burst.max(1.0)
            } else {
                1.0
            },
            max_clients: max_clients.max(1),
            buckets: HashMap::new(),
        }
    }

    /// The sustained rate [1/s].
    pub fn per_s(&self) -> f64 {
        self.per_s
    }

    /// Clients with a bucket now.
    pub fn clients(&self) -> usize {
        self.buckets.len()
    }

    /// Takes one request of `key` at `now_s`; `Err(seconds)`: over its limit, one more
    /// request fits after that long.
    pub fn take(&mut self, key: &ClientKey, now_s: f64) -> Result<(), f64> {
        if !self.buckets.contains_key(key) && self.buckets.len() >= self.max_clients {
            self.evict(now_s);
        }
        let (per_s, burst) = (self.per_s, self.burst);
        let b = self.buckets.entry(key.clone()).or_insert(Bucket {
            tokens: burst,
            last_s: now_s,
        });
        let dt = (now_s - b.last_s).max(0.0);
        b.tokens = (b.tokens + dt * per_s).min(burst);
        b.last_s = b.last_s.max(now_s);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err((1.0 - b.tokens) / per_s)
        }
    }

    fn evict(&mut self, now_s: f64) {
        let (per_s, burst) = (self.per_s, self.burst);
        self.buckets
            .retain(|_, b| b.tokens + (now_s - b.last_s).max(0.0) * per_s < burst);
        if self.buckets.len() >= self.max_clients {
            let oldest = self
                .buckets
                .iter()
                .min_by(|a, b| a.1.last_s.total_cmp(&b.1.last_s))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.buckets.remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(s: &str) -> ClientKey {
        ClientKey::Token(s.into())
    }

    #[test]
    fn a_client_gets_its_burst_then_its_rate_and_others_are_not_affected() {
        let mut l = RateLimits::new(2.0, 3.0, 100);
        let a = token("a");
        for _ in 0..3 {
            assert_eq!(l.take(&a, 10.0), Ok(()));
        }
        // empty: one more fits after half a second at 2/s
        let wait = l.take(&a, 10.0).unwrap_err();
        assert!((wait - 0.5).abs() < 1e-12, "{wait}");
        assert!(l.take(&a, 10.4).is_err());
        assert_eq!(l.take(&a, 10.5), Ok(()));
        // another token, and a peer, have their own buckets
        assert_eq!(l.take(&token("b"), 10.5), Ok(()));
        let peer = ClientKey::Peer("127.0.0.1".parse().unwrap());
        assert_eq!(l.take(&peer, 10.5), Ok(()));
        // a long pause refills to the burst, not beyond
        for _ in 0..3 {
            assert_eq!(l.take(&a, 1000.0), Ok(()));
        }
        assert!(l.take(&a, 1000.0).is_err());
        // time going backwards refills nothing
        assert!(l.take(&a, 999.0).is_err());
    }

    #[test]
    fn memory_stays_bounded_and_full_buckets_go_before_a_busy_clients() {
        let mut l = RateLimits::new(1.0, 2.0, 3);
        let (busy, idle) = (token("busy"), token("idle"));
        l.take(&busy, 0.0).unwrap();
        l.take(&busy, 0.0).unwrap();
        l.take(&idle, 0.0).unwrap();
        l.take(&token("c"), 1.5).unwrap();
        // full: idle's bucket has refilled (dropped), busy's has not (kept)
        l.take(&token("d"), 1.5).unwrap();
        assert_eq!(l.clients(), 3);
        assert!(!l.buckets.contains_key(&idle));
        assert_eq!(l.take(&busy, 1.5), Ok(()));
        assert!(
            l.take(&busy, 1.5).is_err(),
            "busy kept its half-empty bucket"
        );
        for i in 0..100 {
            let _ = l.take(&token(&format!("t{i}")), 2.0);
            assert!(l.clients() <= 3);
        }
    }
}
