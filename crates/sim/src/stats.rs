//! Per-tenant latency statistics: exact nearest-rank percentiles over all requests and over
//! fixed windows of arrival time (the papers' SLO check: the p99.9 of every 3-minute window,
//! snc-meister §5.4, workload-compactor §5.2).

use tailbound_model::{Percentile, Slo};

/// Nearest-rank percentile of `sorted` (ascending) with violation probability `epsilon`
/// (p99.9 → 1e-3): the ⌈(1 − ε)·n⌉-th smallest value, i.e. `n − ⌊ε·n⌋`. `None` when empty.
pub fn nearest_rank(sorted: &[u64], epsilon: f64) -> Option<u64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    // the 1e-12 guards ε·n landing a hair below an integer (0.001 · 1000)
    let above = (epsilon * n as f64 * (1.0 + 1e-12)).floor() as usize;
    let rank = n.saturating_sub(above).max(1);
    Some(sorted[rank - 1])
}

/// The latency percentile of one window of arrival time.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// start of the window, in trace time [s]
    pub start_s: f64,
    /// requests that arrived in the window
    pub requests: u64,
    /// p99.9 of their latencies (nearest rank) [s]
    pub p999_s: f64,
    /// the tenant's SLO percentile of their latencies (nearest rank) [s]; what `meets_slo`
    /// compares with the SLO latency
    pub slo_percentile_s: f64,
}

/// What one tenant's requests experienced.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantResult {
    pub name: String,
    /// completed requests (every request not dropped: the run drains every queue)
    pub requests: u64,
    /// requests dropped at a full shaper queue ([`crate::SimConfig::shaper_queue_bytes`])
    pub dropped: u64,
    /// sum of the completed requests' `size_bytes` [bytes]
    pub bytes: u64,
    /// every request's latency, sorted ascending [ns]
    pub latencies_ns: Vec<u64>,
    /// mean latency [s]
    pub mean_s: f64,
    pub p50_s: f64,
    pub p90_s: f64,
    pub p99_s: f64,
    pub p999_s: f64,
    pub max_s: f64,
    /// the SLO percentile over the whole run [s]
    pub slo_percentile_s: f64,
    /// one entry per window of arrival time that holds at least one request, in time order
    pub windows: Vec<Window>,
    /// every window's SLO percentile is ≤ the SLO latency (vacuously true without requests)
    pub meets_slo: bool,
}

impl TenantResult {
    /// The largest windowed SLO percentile [s] (0 without requests): what `meets_slo`
    /// compares with the SLO latency.
    pub fn worst_window_s(&self) -> f64 {
        self.windows
            .iter()
            .map(|w| w.slo_percentile_s)
            .fold(0.0, f64::max)
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    let eps = (100.0 - p) / 100.0;
    nearest_rank(sorted, eps).map_or(0.0, ns_to_s)
}

fn ns_to_s(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// Builds a tenant's result from its latencies in arrival order, the matching arrival times,
/// the window origin and length [ns].
pub(crate) fn tenant_result(
    name: String,
    slo: &Slo,
    bytes: u64,
    arrivals_ns: &[u64],
    mut latencies_ns: Vec<u64>,
    origin_ns: u64,
    window_ns: u64,
) -> TenantResult {
    let eps = slo.percentile.epsilon();
    let p999 = Percentile::from_nines(3).map_or(1e-3, Percentile::epsilon);
    let mut windows = Vec::new();
    let mut start = 0;
    let mut buf = Vec::new();
    while start < latencies_ns.len() {
        let w = (arrivals_ns[start] - origin_ns) / window_ns;
        let end =
            start + arrivals_ns[start..].partition_point(|&a| (a - origin_ns) / window_ns == w);
        buf.clear();
        buf.extend_from_slice(&latencies_ns[start..end]);
        buf.sort_unstable();
        windows.push(Window {
            start_s: ns_to_s(origin_ns + w * window_ns),
            requests: (end - start) as u64,
            p999_s: nearest_rank(&buf, p999).map_or(0.0, ns_to_s),
            slo_percentile_s: nearest_rank(&buf, eps).map_or(0.0, ns_to_s),
        });
        start = end;
    }
    let meets_slo = windows.iter().all(|w| w.slo_percentile_s <= slo.latency_s);
    let n = latencies_ns.len();
    let mean_s = if n == 0 {
        0.0
    } else {
        latencies_ns.iter().map(|&l| l as f64).sum::<f64>() / n as f64 * 1e-9
    };
    latencies_ns.sort_unstable();
    TenantResult {
        name,
        requests: n as u64,
        dropped: 0,
        bytes,
        mean_s,
        p50_s: pct(&latencies_ns, 50.0),
        p90_s: pct(&latencies_ns, 90.0),
        p99_s: pct(&latencies_ns, 99.0),
        p999_s: pct(&latencies_ns, 99.9),
        max_s: latencies_ns.last().map_or(0.0, |&l| ns_to_s(l)),
        slo_percentile_s: nearest_rank(&latencies_ns, eps).map_or(0.0, ns_to_s),
        windows,
        meets_slo,
        latencies_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_matches_the_definition() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&v, 1e-3), Some(999));
        assert_eq!(nearest_rank(&v, 0.5), Some(500));
        assert_eq!(nearest_rank(&v, 1e-2), Some(990));
        // fewer samples than 1/ε: the maximum
        assert_eq!(nearest_rank(&v[..10], 1e-3), Some(10));
        assert_eq!(nearest_rank(&[7], 0.5), Some(7));
        assert_eq!(nearest_rank(&[], 0.5), None);
        // ⌈0.9 · 15⌉ = 14
        let v: Vec<u64> = (1..=15).collect();
        assert_eq!(nearest_rank(&v, 0.1), Some(14));
    }

    #[test]
    fn windows_split_by_arrival_and_decide_the_slo() {
        let slo = Slo::new(0.010, 50.0).unwrap();
        // window 0: latencies 1 ms, 2 ms; window 2: 20 ms (window 1 empty)
        let arrivals = [0, 5, 25];
        let lat = vec![1_000_000, 2_000_000, 20_000_000];
        let r = tenant_result("t".into(), &slo, 3, &arrivals, lat, 0, 10);
        assert_eq!(r.windows.len(), 2);
        assert_eq!(r.windows[0].requests, 2);
        assert_eq!(r.windows[0].slo_percentile_s, 1e-3);
        assert_eq!(r.windows[1].start_s, 20e-9);
        assert!(!r.meets_slo);
        assert_eq!(r.p50_s, 2e-3);
        assert_eq!(r.max_s, 20e-3);
        assert_eq!(r.latencies_ns, vec![1_000_000, 2_000_000, 20_000_000]);
    }
}
