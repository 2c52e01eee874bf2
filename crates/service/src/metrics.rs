//! Prometheus metrics in the text exposition format (version 0.0.4): decisions by kind and
//! outcome, the decision-latency histogram, admitted tenants, and each tenant's bound against
//! its SLO. Callers measure the latency and pass it in; nothing here reads the clock.

use crate::api::{BoundView, DecisionKind};
use std::fmt::Write;

/// Upper bounds of the decision-latency histogram's buckets [s].
pub const LATENCY_BUCKETS_S: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Counters since the service started.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// (kind, admitted) → count
    decisions: Vec<((DecisionKind, bool), u64)>,
    /// per bucket of [`LATENCY_BUCKETS_S`], not cumulative, then the overflow
    latency_counts: [u64; LATENCY_BUCKETS_S.len() + 1],
    latency_sum_s: f64,
    latency_count: u64,
}

impl Metrics {
    /// Counts one decision that took `latency_s` from request to answer.
    pub fn record(&mut self, kind: DecisionKind, admitted: bool, latency_s: f64) {
        match self
            .decisions
            .iter_mut()
            .find(|(k, _)| *k == (kind, admitted))
        {
            Some((_, n)) => *n += 1,
            None => self.decisions.push(((kind, admitted), 1)),
        }
        let latency_s = if latency_s.is_finite() {
            latency_s.max(0.0)
        } else {
            0.0
        };
        let i = LATENCY_BUCKETS_S.partition_point(|&b| b < latency_s);
        self.latency_counts[i] += 1;
        self.latency_sum_s += latency_s;
        self.latency_count += 1;
    }

    /// The exposition text with `tenants` admitted, their current `bounds` and per-link mean
    /// loads.
    pub fn render(&self, tenants: usize, bounds: &[BoundView], links: &[(String, f64)]) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# HELP tailbound_decisions_total Decisions made, by kind and outcome."
        );
        let _ = writeln!(s, "# TYPE tailbound_decisions_total counter");
        let mut d = self.decisions.clone();
        d.sort_by_key(|((k, a), _)| (format!("{k:?}"), *a));
        for ((kind, admitted), n) in d {
            let kind = match kind {
                DecisionKind::Arrive => "arrive",
                DecisionKind::Depart => "depart",
                DecisionKind::WhatIf => "what-if",
            };
            let outcome = match (kind, admitted) {
                ("depart", _) => "departed",
                (_, true) => "admitted",
                (_, false) => "rejected",
            };
            let _ = writeln!(
                s,
                "tailbound_decisions_total{{kind=\"{kind}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        let _ = writeln!(s, "# HELP tailbound_decision_latency_seconds Time from a decision request to its committed answer.");
        let _ = writeln!(s, "# TYPE tailbound_decision_latency_seconds histogram");
        let mut cumulative = 0;
        for (b, n) in LATENCY_BUCKETS_S.iter().zip(&self.latency_counts) {
            cumulative += n;
            let _ = writeln!(
                s,
                "tailbound_decision_latency_seconds_bucket{{le=\"{b}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            s,
            "tailbound_decision_latency_seconds_bucket{{le=\"+Inf\"}} {}",
            self.latency_count
        );
        let _ = writeln!(
            s,
            "tailbound_decision_latency_seconds_sum {}",
            self.latency_sum_s
        );
        let _ = writeln!(
            s,
            "tailbound_decision_latency_seconds_count {}",
            self.latency_count
        );
        let _ = writeln!(s, "# HELP tailbound_admitted_tenants Tenants admitted now.");
        let _ = writeln!(s, "# TYPE tailbound_admitted_tenants gauge");
        let _ = writeln!(s, "tailbound_admitted_tenants {tenants}");
        let _ = writeln!(s, "# HELP tailbound_tenant_bound_seconds Each admitted tenant's latency bound with the tenants admitted now.");
        let _ = writeln!(s, "# TYPE tailbound_tenant_bound_seconds gauge");
        for b in bounds {
            if let Some(v) = b.bound_s {
                let _ = writeln!(
                    s,
                    "tailbound_tenant_bound_seconds{{tenant=\"{}\"}} {v}",
                    b.tenant
                );
            }
        }
        let _ = writeln!(
            s,
            "# HELP tailbound_tenant_slo_seconds Each admitted tenant's SLO latency."
        );
        let _ = writeln!(s, "# TYPE tailbound_tenant_slo_seconds gauge");
        for b in bounds {
            let _ = writeln!(
                s,
                "tailbound_tenant_slo_seconds{{tenant=\"{}\"}} {}",
                b.tenant, b.slo.latency_s
            );
        }
        let _ = writeln!(s, "# HELP tailbound_tenant_headroom_ratio (SLO - bound) / SLO per admitted tenant; negative or absent (unbounded) means the SLO is not guaranteed.");
        let _ = writeln!(s, "# TYPE tailbound_tenant_headroom_ratio gauge");
        for b in bounds {
            if let Some(v) = b.bound_s {
                let _ = writeln!(
                    s,
                    "tailbound_tenant_headroom_ratio{{tenant=\"{}\"}} {}",
                    b.tenant,
                    (b.slo.latency_s - v) / b.slo.latency_s
                );
            }
        }
        let _ = writeln!(s, "# HELP tailbound_queue_load_ratio Mean offered load of the admitted tenants on each queue, as a fraction of its rate.");
        let _ = writeln!(s, "# TYPE tailbound_queue_load_ratio gauge");
        for (q, l) in links {
            let _ = writeln!(s, "tailbound_queue_load_ratio{{queue=\"{q}\"}} {l}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_counts_every_decision() {
        let mut m = Metrics::default();
        m.record(DecisionKind::Arrive, true, 0.0007);
        m.record(DecisionKind::Arrive, false, 0.003);
        m.record(DecisionKind::Depart, false, 20.0);
        let text = m.render(1, &[], &[]);
        assert!(
            text.contains("tailbound_decision_latency_seconds_bucket{le=\"0.0005\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("tailbound_decision_latency_seconds_bucket{le=\"0.001\"} 1\n"));
        assert!(text.contains("tailbound_decision_latency_seconds_bucket{le=\"0.005\"} 2\n"));
        assert!(text.contains("tailbound_decision_latency_seconds_bucket{le=\"10\"} 2\n"));
        assert!(text.contains("tailbound_decision_latency_seconds_bucket{le=\"+Inf\"} 3\n"));
        assert!(
            text.contains("tailbound_decisions_total{kind=\"arrive\",outcome=\"rejected\"} 1\n")
        );
        assert!(
            text.contains("tailbound_decisions_total{kind=\"depart\",outcome=\"departed\"} 1\n")
        );
        assert!(text.contains("tailbound_admitted_tenants 1\n"));
    }
}
