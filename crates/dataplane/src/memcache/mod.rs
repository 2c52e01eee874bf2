//! The memcached text protocol, both halves, and a memcached process to talk to.
//!
//! * [`request`] — the **server side**: requests parsed incrementally from a byte buffer
//!   ([`request::parse_request`]: a complete request, a request to reject with memcached's own
//!   error reply, or "need more bytes"), bounded by [`Limits`]; and the **client side**'s
//!   encoder ([`request::Request::encode`]).
//! * [`reply`] — replies: framed incrementally ([`reply::ReplyReader`], what a proxy needs to
//!   forward replies without decoding them) and decoded into [`reply::Reply`] (what a client
//!   needs).
//! * [`client`] — an async client (tokio) with pipelining: requests go out in order, replies
//!   come back in order.
//! * [`server`] — [`server::Memcached`]: a real memcached (Debian's `/usr/bin/memcached`)
//!   started on loopback by PID and stopped when dropped, for tests, benches and the testbed.
//! * [`load`] — a closed- and open-loop load generator with latency percentiles.
//!
//! **Commands.** Retrieval `get`, `gets`, `gat`, `gats`; storage `set`, `add`, `replace`,
//! `append`, `prepend`, `cas`; `delete`, `incr`, `decr`, `touch`, `version`, `quit`; and the
//! meta commands `mg`, `ms`, `md`, `ma`, `mn`, `me` (memcached ≥ 1.6). Administrative commands
//! (`stats`, `flush_all`, `verbosity`, `shutdown`, ...) are recognised and refused with a
//! `CLIENT_ERROR`: in front of a shared memcached a tenant must not flush or reconfigure it.
//! The binary protocol is not supported.
//!
//! **Errors follow memcached.** An unknown command gets `ERROR`, a malformed line
//! `CLIENT_ERROR bad command line format`, a value larger than [`Limits::max_value`]
//! `SERVER_ERROR object too large for cache` (its data is skipped), a data block not ended by
//! `\r\n` `CLIENT_ERROR bad data chunk`, and a line longer than [`Limits::max_line`]
//! `CLIENT_ERROR line too long` (then the connection closes, since no line boundary can be
//! found). Lines may end in `\n` alone, as memcached accepts.
//!
//! What lives elsewhere: the enforcer proxy that uses both halves is `tailbound-enforcer`;
//! trace replay against memcached is the testbed's.

pub mod client;
pub mod load;
pub mod reply;
pub mod request;
pub mod server;

pub use client::Client;
pub use reply::{Reply, ReplyReader, ReplyShape};
pub use request::{parse_request, Command, Parse, Parsed, Request};
pub use server::{Memcached, MemcachedOptions};

/// Longest key memcached accepts [bytes].
pub const MAX_KEY_BYTES: usize = 250;

/// Bounds on what a parser accepts, so memory per connection stays bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// longest command line, terminator included [bytes]
    pub max_line: usize,
    /// largest data block of a storage command or of a value in a reply [bytes]
    /// (memcached's default item size limit is 1 MiB)
    pub max_value: usize,
    /// most keys in one retrieval command
    pub max_keys: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line: 8192,
            max_value: 1 << 20,
            max_keys: 256,
        }
    }
}

/// Why a memcached exchange or process failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemcacheError {
    #[error("cannot connect to memcached at {addr}: {source}")]
    Connect {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("memcached at {addr}: {what} timed out after {timeout_s} s")]
    Timeout {
        addr: std::net::SocketAddr,
        what: &'static str,
        timeout_s: f64,
    },
    #[error("memcached at {addr}: {source}")]
    Io {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("memcached at {addr} closed the connection with {pending} replies outstanding")]
    Closed {
        addr: std::net::SocketAddr,
        pending: usize,
    },
    #[error("memcached at {addr} sent a malformed reply: {message}")]
    Protocol {
        addr: std::net::SocketAddr,
        message: String,
    },
    #[error("invalid request: {0}")]
    Request(String),
    #[error("cannot start memcached ({binary}): {message}")]
    Start { binary: String, message: String },
    #[error("invalid load: {0}")]
    Load(String),
}
