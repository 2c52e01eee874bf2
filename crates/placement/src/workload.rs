//! A workload as placement sees it: an SLO and one r-b curve per stage; and the normalised,
//! margin-scaled curves the LP and the baselines work on.

use crate::{LpStage, PlacementError, ServerSpec};
use serde::{Deserialize, Serialize};
use tailbound_curves::rb::{prune, sustained_arrival_curve, work_series};
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::{RbCurve, Request, Slo, Stage};

/// The r-b curves of one workload, in each stage's work unit (`[rate [work/s], burst [work]]`).
/// The client NIC receives the responses, so it uses `net_out`'s curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageCurves {
    /// requests into the server [bytes]
    pub net_in: RbCurve,
    /// the server's storage device [busy-s]
    pub storage: RbCurve,
    /// responses out of the server (and into the client) [bytes]
    pub net_out: RbCurve,
}

impl StageCurves {
    /// The curve of `stage` in work units.
    pub fn get(&self, stage: LpStage) -> &RbCurve {
        match stage {
            LpStage::NetIn => &self.net_in,
            LpStage::Storage => &self.storage,
            LpStage::NetOut | LpStage::ClientIn => &self.net_out,
        }
    }
}

/// A workload to place: a name, a tail-latency SLO and its r-b curves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub name: String,
    /// latency [s] at a percentile; the DNC bounds used here hold at every percentile
    pub slo: Slo,
    pub curves: StageCurves,
}

/// The r-b curves of `requests` per stage, as decisions should use them: the exact curve of
/// each stage's work ([`tailbound_curves::rb`]) continued at the mean rate, so that no rate
/// below the workload's long-term rate is ever chosen (its first vertex is the mean rate),
/// optionally pruned to `max_segments` token buckets (an upper bound, like the original's 12).
/// Storage work comes from `profile`.
pub fn characterize(
    name: &str,
    requests: &[Request],
    profile: &StorageProfile,
    max_segments: Option<usize>,
) -> Result<StageCurves, PlacementError> {
    let err = |message: String| PlacementError::Characterize {
        name: name.to_string(),
        message,
    };
    if requests.is_empty() {
        return Err(err("no requests to characterize".into()));
    }
    let curve = |stage: Stage| -> Result<RbCurve, PlacementError> {
        let series = work_series(requests, stage_work(stage, profile))
            .map_err(|e| err(format!("{stage}: {e}")))?;
        let mut arrival =
            sustained_arrival_curve(&series).map_err(|e| err(format!("{stage}: {e}")))?;
        if let Some(k) = max_segments {
            arrival = prune(&arrival, k).map_err(|e| err(format!("{stage}: {e}")))?;
        }
        Ok(arrival.to_rb())
    };
    Ok(StageCurves {
        net_in: curve(Stage::NetIn)?,
        storage: curve(Stage::Storage)?,
        net_out: curve(Stage::NetOut)?,
    })
}

/// An r-b curve normalised by a stage's capacity and scaled by a safety margin: vertices
/// `[r [1], b [s]]`, r ascending from the workload's long-term rate, b convex and
/// non-increasing, constant beyond the last vertex.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NormCurve {
    vertices: Vec<[f64; 2]>,
}

impl NormCurve {
    /// `curve` [work/s, work] divided by `capacity` [work/s] and scaled by `1 + margin` in both
    /// coordinates (the work of every request grown by the margin: workload-compactor §5.2's
    /// "scaling the r-b curves by 1.1" for a 10% margin).
    pub fn new(curve: &RbCurve, capacity: f64, margin: f64) -> NormCurve {
        let f = (1.0 + margin) / capacity;
        NormCurve {
            vertices: curve
                .vertices()
                .iter()
                .map(|&[r, b]| [r * f, b * f])
                .collect(),
        }
    }

    /// `[r [1], b [s]]`, r ascending.
    pub fn vertices(&self) -> &[[f64; 2]] {
        &self.vertices
    }

    /// The long-term rate: the least rate the curve allows [1].
    pub fn min_rate(&self) -> f64 {
        self.vertices[0][0]
    }

    /// The least burst at rate `r` [s]; `None` below [`NormCurve::min_rate`].
    pub fn burst_at(&self, r: f64) -> Option<f64> {
        let v = &self.vertices;
        if r.is_nan() || r < v[0][0] {
            return None;
        }
        let i = v.partition_point(|p| p[0] <= r);
        if i == v.len() {
            return Some(v[v.len() - 1][1]);
        }
        let (a, c) = (v[i - 1], v[i]);
        Some(a[1] + (c[1] - a[1]) * (r - a[0]) / (c[0] - a[0]))
    }

    /// The least burst of the curve, reached at its last vertex [s].
    pub fn min_burst(&self) -> f64 {
        self.vertices[self.vertices.len() - 1][1]
    }

    /// The knee (workload-compactor §4.1.3): the vertex minimising r + b in these normalised
    /// units, i.e. the fraction of the stage plus the seconds of full-capacity service the
    /// burst takes. Since r + b is linear between vertices, its minimum over the convex curve
    /// is at a vertex: the one where the curve's slope crosses −1 s.
    pub fn knee(&self) -> [f64; 2] {
        let mut best = self.vertices[0];
        for &v in &self.vertices[1..] {
            if v[0] + v[1] < best[0] + best[1] {
                best = v;
            }
        }
        best
    }

    /// The curve as an [`RbCurve`] (for `tailbound-curves`' effective bandwidth).
    pub(crate) fn to_rb(&self) -> Option<RbCurve> {
        RbCurve::new(self.vertices.clone()).ok()
    }
}

/// A workload's four normalised curves (`LpStage` order) and its SLO budget.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prepared {
    pub curves: [NormCurve; 4],
    /// SLO latency minus the device's profiled latency [s]
    pub budget_s: f64,
}

impl Prepared {
    pub fn new(w: &Workload, server: &ServerSpec, margin: f64) -> Result<Prepared, PlacementError> {
        let curves =
            LpStage::ALL.map(|s| NormCurve::new(w.curves.get(s), server.capacity(s), margin));
        let budget_s = w.slo.latency_s - server.device_latency_s;
        for (s, c) in LpStage::ALL.iter().zip(&curves) {
            if c.vertices.iter().flatten().any(|x| !x.is_finite()) {
                return Err(PlacementError::Workload {
                    name: w.name.clone(),
                    message: format!("{} curve is not finite after normalisation", s.as_str()),
                });
            }
        }
        Ok(Prepared { curves, budget_s })
    }

    /// The long-term rates at the server stages [1].
    pub fn min_rates(&self) -> [f64; 3] {
        LpStage::SERVER.map(|s| self.curves[s.index()].min_rate())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve() -> RbCurve {
        RbCurve::new(vec![[10.0, 100.0], [20.0, 40.0], [40.0, 10.0]]).unwrap()
    }

    #[test]
    fn normalises_and_scales_both_coordinates() {
        let n = NormCurve::new(&curve(), 100.0, 0.1);
        let v = n.vertices();
        assert!((v[0][0] - 0.11).abs() < 1e-12 && (v[0][1] - 1.1).abs() < 1e-12);
        assert!((n.min_rate() - 0.11).abs() < 1e-12);
        assert!((n.min_burst() - 0.11).abs() < 1e-12);
        assert_eq!(n.burst_at(0.1), None);
        // halfway between the first two vertices
        let mid = n.burst_at(0.165).unwrap();
        assert!((mid - 0.77).abs() < 1e-12, "{mid}");
        assert_eq!(n.burst_at(5.0), Some(n.min_burst()));
    }

    #[test]
    fn knee_minimises_r_plus_b() {
        // normalised by 100: (0.1, 1.0), (0.2, 0.4), (0.4, 0.1): sums 1.1, 0.6, 0.5
        let n = NormCurve::new(&curve(), 100.0, 0.0);
        assert_eq!(n.knee(), [0.4, 0.1]);
        let n = NormCurve::new(&curve(), 10.0, 0.0);
        // (1, 10), (2, 4), (4, 1): sums 11, 6, 5
        assert_eq!(n.knee(), [4.0, 1.0]);
    }
}
