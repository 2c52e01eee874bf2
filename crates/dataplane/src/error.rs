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
    #[error("{hosts} hosts cannot be built: use 1 to {max} hosts (two without a bridge)")]
    Hosts { hosts: usize, max: usize },
    #[error("invalid host label {0:?}: use 1 to 12 lowercase letters, digits or '-', unique, not \"sw\"")]
    Label(String),
    #[error("a persistent testbed is already up ({}); remove it first with `tailbound testbed down`", .0.join(", "))]
    Exists(Vec<String>),
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
    #[error("invalid time {time_s} s; use a positive duration of at most 1 day (e.g. --time 10s)")]
    Time { time_s: f64 },
    #[error("no exchange was measured within the time limit of {time_s} s ({warmup} warm-up exchanges first); give more --time or fewer --warmup exchanges")]
    NothingMeasured { time_s: f64, warmup: u64 },
    #[error(transparent)]
    Netns(#[from] NetnsError),
}

/// Why a replay (or a preload, or an aggressor) could not run or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error("invalid replay: {0}")]
    Options(String),
    #[error("tenant {tenant:?} cannot reach memcached at {server}: {message}; is the server up and the link between the hosts built?")]
    Connect {
        tenant: String,
        server: SocketAddr,
        message: String,
    },
    #[error("cannot preload memcached at {server}: {message}")]
    Preload { server: SocketAddr, message: String },
    #[error("cannot listen on {protocol} {addr}: {source}")]
    Bind {
        protocol: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start a replay thread or runtime: {0}")]
    Thread(#[source] std::io::Error),
    #[error("a replay thread panicked")]
    Panicked,
    #[error("the replay was interrupted")]
    Interrupted,
    #[error(transparent)]
    Netns(#[from] NetnsError),
}

/// Why tc enforcement could not read, apply, check or remove a configuration. Errors after a
/// change started say which configuration the host is left at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TcError {
    #[error("cannot run `{program}`: {source}; tc comes with iproute2 (apt-get install -y iproute2); nothing was changed")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("host {host:?}: interface {interface:?} does not exist{}; check the host map (nothing was changed)", in_ns(netns))]
    NoInterface {
        host: String,
        interface: String,
        netns: Option<String>,
    },
    #[error(
        "host {host:?}: {source}; does the namespace exist (ip netns list)? Nothing was changed"
    )]
    Netns {
        host: String,
        #[source]
        source: NetnsError,
    },
    #[error("host {host:?} interface {interface:?}: cannot read its tc configuration over netlink: {source}")]
    Read {
        host: String,
        interface: String,
        #[source]
        source: std::io::Error,
    },
    #[error("host {host:?} interface {interface:?} has a root qdisc `{kind} {handle:x}:` that tailbound did not create and could not restore on remove; delete it (tc qdisc del dev {interface} root) or leave the interface out of the host map; nothing was changed")]
    Foreign {
        host: String,
        interface: String,
        kind: String,
        handle: u16,
    },
    #[error("host {host:?} interface {interface:?}: `tc {command}` failed: {message}; {state}")]
    Failed {
        host: String,
        interface: String,
        command: String,
        message: String,
        state: String,
    },
    #[error("host {host:?} interface {interface:?}: after the batch the kernel differs from the plan ({difference}); {state}")]
    Verify {
        host: String,
        interface: String,
        difference: String,
        state: String,
    },
    #[error("host {host:?} interface {interface:?}: tc did not finish within {seconds} s and was killed; {state}")]
    Timeout {
        host: String,
        interface: String,
        seconds: u64,
        state: String,
    },
    #[error("cannot {what} {path}: {source}")]
    Record {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a record tailbound wrote ({message}); delete it to start over (remove can then not restore what the interface had before)")]
    BadRecord {
        path: std::path::PathBuf,
        message: String,
    },
    #[error("another tailbound is changing host {host:?} interface {interface:?} (lock {path} held for {seconds} s); try again when it is done")]
    Busy {
        host: String,
        interface: String,
        path: std::path::PathBuf,
        seconds: u64,
    },
    #[error("a tc worker thread panicked: {0}")]
    Panicked(String),
}

fn in_ns(netns: &Option<String>) -> String {
    match netns {
        Some(ns) => format!(" in network namespace {ns:?}"),
        None => String::new(),
    }
}

/// A host map file that cannot be read or is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostMapFileError {
    #[error("cannot read host map {path}: {source}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Invalid(#[from] tailbound_enforce_plan::HostMapError),
}
