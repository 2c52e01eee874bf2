//! The one error type of the simulator.

/// Why a simulation could not run. Raised before any event is processed, except
/// [`SimError::Work`], which is raised when the offending request reaches the stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    #[error("invalid network: {0}")]
    Network(#[from] tailbound_model::NetworkError),
    #[error("{got} tenant workloads given for {expected} tenants; give one per tenant, in network order")]
    WorkloadCount { expected: usize, got: usize },
    #[error("tenant {tenant:?} has {expected} flows but its workload gives {got} work functions; give one per flow, in the tenant's flow order")]
    FlowCount {
        tenant: String,
        expected: usize,
        got: usize,
    },
    #[error("tenant {tenant:?}: request {index} arrives at {arrival_ns} ns, before the previous one at {previous_ns} ns; requests must be sorted by arrival")]
    Unsorted {
        tenant: String,
        index: usize,
        arrival_ns: u64,
        previous_ns: u64,
    },
    #[error("{what} has {got} entries for {expected} {of}; give one per {of_one} or none")]
    ConfigLength {
        what: &'static str,
        of: &'static str,
        of_one: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("mtu of {0} bytes is invalid; expected at least 1 byte, e.g. 1500")]
    Mtu(u64),
    #[error(
        "3-minute-style window of {0} s is invalid; expected a finite length > 0 [s], e.g. 180"
    )]
    Window(f64),
    #[error("shaper of flow {flow:?}: {source}")]
    Shaper {
        flow: String,
        #[source]
        source: tailbound_shaping::ShapingError,
    },
    #[error("tenant {tenant:?}: request {index} puts work {work} on flow {flow:?}; work functions must return finite work >= 0")]
    Work {
        tenant: String,
        flow: String,
        index: usize,
        work: f64,
    },
    #[error("tenant {tenant:?}: request {index} would wait beyond the end of the u64 ns clock at the shaper of flow {flow:?}; its rate is far too low for its work")]
    ShaperStall {
        tenant: String,
        flow: String,
        index: usize,
    },
    #[error("EyeQ receiver queue index {index} does not exist; the network has {queues} queues (0..{queues})")]
    EyeqQueue { index: usize, queues: usize },
    #[error("EyeQ receiver listed twice on queue {0:?}; list each receiving link once")]
    EyeqDuplicate(String),
    #[error("flow {flow:?} crosses two EyeQ receivers ({first:?} and {second:?}); list only the links into receiving hosts, which a flow crosses once")]
    EyeqTwoReceivers {
        flow: String,
        first: String,
        second: String,
    },
    #[error("EyeQ's limiters hold excess requests at the sender; simulate EyeQ with excess = wait, not best effort")]
    EyeqExcess,
    #[error("EyeQ receiver on queue {queue:?}: {source}")]
    Eyeq {
        queue: String,
        #[source]
        source: tailbound_shaping::eyeq::EyeqError,
    },
    #[error(
        "tenant {0:?}: a closed-loop window of 0 requests never sends; use a window of at least 1"
    )]
    ClosedLoopWindow(String),
    #[error("shaper queue of {0} is invalid; use a finite amount of work >= 0 [bytes on links], e.g. 131072")]
    ShaperQueue(f64),
    #[error("throughput bin of 0 ns is invalid; use a bin of at least 1 ns, e.g. 1 ms")]
    ThroughputBin,
    #[error("tenant {tenant:?} has {requests} requests; at most {max} per tenant are supported")]
    TooManyRequests {
        tenant: String,
        requests: usize,
        max: usize,
    },
}
