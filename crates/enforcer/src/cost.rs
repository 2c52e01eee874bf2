//! What a memcached request costs on each hop of its flow's path (pulsar §3): message bytes on
//! network hops, the appliance's virtual cost function on the appliance hop
//! ([`Datacenter::hop_cost`], the code the simulator charges with).
//!
//! A request is a [`Request`] of op `Put` (writes and everything that is not a read:
//! `delete`, `incr`, `touch`, `mn`, ...; size = its data block, 0 without one) or `Get`, one per
//! key of a retrieval. A GET's size is its value's, known only from the reply: it is charged
//! the flow's running estimate (an exponentially weighted mean of the values it has read,
//! weight 1/8 for the newest) and settled when the reply is in, each value at its own size and
//! each miss at size 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tailbound_allocation::Datacenter;
use tailbound_dataplane::memcache::Parsed;
use tailbound_model::{Op, Request};

/// Charges the requests of one flow; shared by its connections.
#[derive(Debug)]
pub struct Charger {
    dc: Arc<Datacenter>,
    /// index into the datacenter's flows
    flow: usize,
    /// running mean of the values read [bytes], as f64 bits
    read_bytes: AtomicU64,
}

/// What a request was charged at submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// tokens per hop
    pub costs: Vec<f64>,
    /// keys read (its real cost is known from the reply), 0 for writes
    pub reads: u32,
}

impl Charger {
    /// A charger for datacenter flow `flow` (which must exist).
    pub fn new(dc: Arc<Datacenter>, flow: usize) -> Charger {
        Charger {
            dc,
            flow,
            read_bytes: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Hops on the flow's path.
    pub fn hops(&self) -> usize {
        self.dc.flows[self.flow].hops.len()
    }

    /// Adds `n` requests of `op` and `size` to `costs`, per hop.
    fn add(&self, op: Op, size: u64, n: f64, costs: &mut [f64]) {
        let req = Request {
            arrival_ns: 0,
            size_bytes: size,
            op,
        };
        for (c, hop) in costs.iter_mut().zip(&self.dc.flows[self.flow].hops) {
            *c += n * self.dc.hop_cost(hop, &req);
        }
    }

    /// The flow's current estimate of a value's size [bytes].
    pub fn read_estimate(&self) -> u64 {
        f64::from_bits(self.read_bytes.load(Ordering::Relaxed)).round() as u64
    }

    /// What `p` is charged now.
    pub fn charge(&self, p: &Parsed) -> Charge {
        let mut costs = Vec::new();
        let reads = self.charge_into(p, &mut costs);
        Charge { costs, reads }
    }

    /// What `p` is charged now, per hop into `costs` (cleared first); returns the keys it
    /// reads (0 for writes).
    pub fn charge_into(&self, p: &Parsed, costs: &mut Vec<f64>) -> u32 {
        costs.clear();
        costs.resize(self.hops(), 0.0);
        if p.command.is_read() {
            let n = p.keys.max(1);
            self.add(Op::Get, self.read_estimate(), f64::from(n), costs);
            n
        } else {
            self.add(Op::Put, p.data_len as u64, 1.0, costs);
            0
        }
    }

    /// The real cost of a read whose reply carried values of `sizes` bytes (misses: the keys
    /// without a value), per hop; updates the estimate.
    pub fn settle(&self, reads: u32, sizes: &[usize]) -> Vec<f64> {
        let mut costs = Vec::new();
        self.settle_into(reads, sizes, &mut costs);
        costs
    }

    /// [`Self::settle`] into `costs` (cleared first).
    pub fn settle_into(&self, reads: u32, sizes: &[usize], costs: &mut Vec<f64>) {
        costs.clear();
        costs.resize(self.hops(), 0.0);
        for &s in sizes {
            self.add(Op::Get, s as u64, 1.0, costs);
            let _ = self
                .read_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                    let m = f64::from_bits(bits);
                    Some((m + (s as f64 - m) / 8.0).to_bits())
                });
        }
        let misses = (reads as usize).saturating_sub(sizes.len());
        if misses > 0 {
            self.add(Op::Get, 0, misses as f64, costs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_allocation::VdcSpec;
    use tailbound_dataplane::memcache::{parse_request, Limits, Parse};

    fn parsed(s: &[u8]) -> Parsed {
        match parse_request(s, &Limits::default()) {
            Some(Parse::Request(p)) => p,
            other => panic!("{other:?}"),
        }
    }

    fn charger() -> Charger {
        let spec = r#"
header_bytes = 64
[[servers]]
name = "s0"
link = 1e9
[[servers]]
name = "s1"
link = 1e9
[[appliances]]
name = "kv"
server = "s0"
capacity = 1e6
cost = { read = { vertices = [[8192.0, 8192.0], [16384.0, 16384.0]] }, write = { vertices = [[8192.0, 8192.0], [16384.0, 16384.0]] } }
[[tenants]]
name = "B"
vms = [{ name = "b1", server = "s1", link = 1e6 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 1e6 }]
flows = [{ name = "b1-kv", src = "b1", dst = "kv" }]
"#;
        let (_, dc) = VdcSpec::parse("t.toml", spec).unwrap();
        Charger::new(Arc::new(dc), 0)
    }

    #[test]
    fn writes_cost_their_data_on_every_hop() {
        let c = charger();
        // b1.up on s1.up, s0.down, kv, s0.up, s1.down
        let mut set = b"set k 0 0 10000\r\n".to_vec();
        set.extend(std::iter::repeat_n(b'x', 10000));
        set.extend_from_slice(b"\r\n");
        let ch = c.charge(&parsed(&set));
        assert_eq!(ch.reads, 0);
        assert_eq!(ch.costs, vec![10064.0, 10064.0, 10000.0, 64.0, 64.0]);
        let ch = c.charge(&parsed(b"delete k\r\n"));
        assert_eq!(ch.costs, vec![64.0, 64.0, 8192.0, 64.0, 64.0]);
    }

    #[test]
    fn reads_are_estimated_then_settled() {
        let c = charger();
        let ch = c.charge(&parsed(b"get a b\r\n"));
        assert_eq!(ch.reads, 2);
        assert_eq!(ch.costs, vec![128.0, 128.0, 2.0 * 8192.0, 128.0, 128.0]);
        // one hit of 16000 bytes, one miss
        let real = c.settle(2, &[16000]);
        assert_eq!(
            real,
            vec![
                128.0,
                128.0,
                16000.0 + 8192.0,
                16064.0 + 64.0,
                16064.0 + 64.0
            ]
        );
        assert_eq!(c.read_estimate(), 2000);
        let ch = c.charge(&parsed(b"mg a v\r\n"));
        assert_eq!(ch.costs[4], 2064.0);
    }
}
