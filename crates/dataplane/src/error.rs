//! The errors of the dataplane: namespace set-up and probe runs.

use std::net::SocketAddr;

/// Why a network-namespace operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetnsError {
    #[error("network namespaces need root (CAP_SYS_ADMIN); run as root or drop --netns to probe over loopback")]
    NotRoot,
    #[error("cannot run `{program}`: {source}; install iproute2 (apt-get install -y iproute2)")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed with {status}: {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("cannot enter network namespace {name:?}: {source}")]
    Enter {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid link rate {rate_bytes_per_s} B/s; the shaped link needs a positive rate of at least 1 kbit/s (e.g. --link-rate 1Gbit)")]
    Rate { rate_bytes_per_s: f64 },
}

/// Why a probe could not run or could not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    #[error("invalid payload size {size_bytes} B; the probe sends {min} B to {max} B per exchange (e.g. --size 1KB)")]
    Size {
        size_bytes: u64,
        min: usize,
        max: usize,
    },
    #[error("udp payload {size_bytes} B exceeds the datagram limit of {limit} B (IPv4: 65535 - 20 IP - 8 UDP header bytes); use --protocol tcp for larger payloads")]
    UdpTooLarge { size_bytes: usize, limit: usize },
    #[error("invalid number of pairs {pairs}; use 1 to {max} concurrent client-server pairs")]
    Pairs { pairs: usize, max: usize },
    #[error("invalid count {count}; measure at least 1 exchange per pair (count {count} < pairs {pairs})")]
    Count { count: u64, pairs: usize },
    #[error("invalid open-loop rate {rate_per_s} requests/s; use a positive finite rate (e.g. --rate 10000)")]
    Rate { rate_per_s: f64 },
    #[error("invalid timeout {timeout_s} s; use a positive duration (e.g. --timeout 2s)")]
    Timeout { timeout_s: f64 },
    #[error("cannot pin to cpu {cpu}: this process may use cpus {allowed:?}")]
    Cpu { cpu: usize, allowed: Vec<usize> },
    #[error("unknown protocol {0:?}; use tcp or udp")]
    UnknownProtocol(String),
    #[error("unknown I/O mode {0:?}; use blocking or nonblocking")]
    UnknownIoMode(String),
    #[error("rdma is not available on this machine: {0}; probe tcp or udp instead")]
    RdmaUnavailable(String),
    #[error("cannot listen on {protocol} {addr}: port {port} is already in use; choose another --port (or 0 for any free port) or stop the process using it", port = addr.port())]
    PortInUse {
        protocol: &'static str,
        addr: SocketAddr,
    },
    #[error("cannot listen on {protocol} {addr}: {source}")]
    Bind {
        protocol: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot connect to {protocol} {addr}: {source}; is `tailbound probe server` running there?"
    )]
    Connect {
        protocol: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("udp server {addr} did not answer the handshake within {timeout_s} s; is `tailbound probe server` running there?")]
    Handshake { addr: SocketAddr, timeout_s: f64 },
    #[error("no reply from {protocol} server {addr} within {timeout_s} s (pair {pair}, exchange {seq}); raise --timeout for slow links or large payloads")]
    ReplyTimeout {
        protocol: &'static str,
        addr: SocketAddr,
        pair: usize,
        seq: u64,
        timeout_s: f64,
    },
    #[error("{protocol} exchange with {addr} failed (pair {pair}): {source}")]
    Io {
        protocol: &'static str,
        addr: SocketAddr,
        pair: usize,
        #[source]
        source: std::io::Error,
    },
    #[error("server {addr} sent a malformed reply (pair {pair}): {what}")]
    Protocol {
        addr: SocketAddr,
        pair: usize,
        what: String,
    },
    #[error("cannot start the probe's threads: {0}")]
    Thread(#[source] std::io::Error),
    #[error("a probe thread panicked: {0}")]
    Panicked(String),
    #[error("the run was interrupted")]
    Interrupted,
    #[error("every {protocol} reply was lost ({lost} of {sent}); nothing to report")]
    AllLost {
        protocol: &'static str,
        lost: u64,
        sent: u64,
    },
    #[error(transparent)]
    Netns(#[from] NetnsError),
}
