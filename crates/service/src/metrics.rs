//! Prometheus metrics in the text exposition format (version 0.0.4): decisions by kind and
//! outcome, the decision-latency histogram, admitted tenants, each tenant's bound against its
//! SLO, and every hosted VDC's controller (enforcers live and stale, allocations, capacities,
//! violated guarantees). Callers measure the latency and pass it in; nothing here reads the
//! clock.

use crate::api::{BoundView, DecisionKind};
use crate::vdc::VdcView;
use std::fmt::Write;
use tailbound_control::protocol::Status;

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

    /// The exposition text with `tenants` admitted, their current `bounds`, per-link mean
    /// loads and the hosted VDCs' controllers.
    pub fn render(
        &self,
        tenants: usize,
        bounds: &[BoundView],
        links: &[(String, f64)],
        vdcs: &[(VdcView, Status)],
    ) -> String {
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
        render_vdcs(&mut s, vdcs);
        s
    }
}

/// One gauge family: its help and type lines, then one sample per `(labels, value)`.
fn gauge(s: &mut String, name: &str, help: &str, samples: impl IntoIterator<Item = (String, f64)>) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} gauge");
    for (labels, v) in samples {
        let _ = writeln!(s, "{name}{{{labels}}} {v}");
    }
}

/// A gauge's samples: (labels, value).
type Samples = Vec<(String, f64)>;

/// A label value as the exposition format quotes it (backslash, quote and newline escaped).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The hosted VDCs' controllers: control steps, enforcers by state, per-flow allocations by
/// hop, per-resource capacities, violated and overcommitted counts.
fn render_vdcs(s: &mut String, vdcs: &[(VdcView, Status)]) {
    let each = |f: &dyn Fn(&str, &VdcView, &Status) -> Samples| -> Samples {
        vdcs.iter()
            .flat_map(|(v, st)| f(&label(&v.name), v, st))
            .collect()
    };
    gauge(
        s,
        "tailbound_vdc_control_steps",
        "Control steps each hosted VDC's controller has run.",
        each(&|n, v, _| vec![(format!("vdc=\"{n}\""), v.epoch as f64)]),
    );
    gauge(
        s,
        "tailbound_vdc_enforcers",
        "Registered enforcers of each VDC, live (reporting) or stale (silent for stale_after intervals; they keep their last allocation).",
        each(&|n, v, _| {
            vec![
                (
                    format!("vdc=\"{n}\",state=\"live\""),
                    v.enforcers.saturating_sub(v.stale) as f64,
                ),
                (format!("vdc=\"{n}\",state=\"stale\""), v.stale as f64),
            ]
        }),
    );
    gauge(
        s,
        "tailbound_vdc_flow_rate_tokens_per_second",
        "Each VDC flow's allocation per hop [tokens/s], guaranteed (local) part and total.",
        each(&|n, _, st| {
            st.flows
                .iter()
                .flat_map(|f| {
                    let flow = label(&f.flow);
                    f.hops.iter().enumerate().flat_map(move |(i, hop)| {
                        let hop = label(hop);
                        let base =
                            format!("vdc=\"{n}\",flow=\"{flow}\",hop=\"{i}\",resource=\"{hop}\"");
                        [
                            f.rates
                                .get(i)
                                .map(|&r| (format!("{base},part=\"total\""), r)),
                            f.local_rates
                                .get(i)
                                .map(|&r| (format!("{base},part=\"guaranteed\""), r)),
                        ]
                        .into_iter()
                        .flatten()
                    })
                })
                .filter(|(_, v)| v.is_finite())
                .collect()
        }),
    );
    gauge(
        s,
        "tailbound_vdc_resource_capacity_tokens_per_second",
        "The capacity each VDC's last control step used per physical resource (estimated for appliances whose capacity is estimated) [tokens/s].",
        each(&|n, _, st| {
            st.resources
                .iter()
                .filter(|r| r.capacity.is_finite())
                .map(|r| (format!("vdc=\"{n}\",resource=\"{}\"", label(&r.name)), r.capacity))
                .collect()
        }),
    );
    gauge(
        s,
        "tailbound_vdc_violated_tenants",
        "Tenants of each VDC whose guarantee was violated at an appliance in the last interval.",
        each(&|n, _, st| vec![(format!("vdc=\"{n}\""), st.violated.len() as f64)]),
    );
    gauge(
        s,
        "tailbound_vdc_overcommitted_resources",
        "Physical resources of each VDC whose guaranteed allocations exceed their capacity.",
        each(&|n, _, st| vec![(format!("vdc=\"{n}\""), st.overcommitted.len() as f64)]),
    );
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
        let text = m.render(1, &[], &[], &[]);
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

    #[test]
    fn every_hosted_vdc_shows_its_enforcers_allocations_and_capacities() {
        use crate::vdc::VdcSettings;
        use tailbound_control::protocol::{FlowStatus, ResourceStatus};
        let view = VdcView {
            name: "dc\"1".into(),
            controller: VdcSettings::default(),
            tenants: vec!["A".into()],
            flows: 1,
            epoch: 7,
            enforcers: 3,
            stale: 1,
            spec: None,
        };
        let status = Status {
            epoch: 7,
            interval_ns: 1_000_000_000,
            enforcers: vec![],
            flows: vec![FlowStatus {
                flow: "A/a1".into(),
                enforcer: Some("e1".into()),
                hops: vec!["-".into(), "kv".into()],
                demand: vec![10.0, 20.0],
                rates: vec![100.0, f64::NAN],
                local_rates: vec![50.0, 25.0],
            }],
            resources: vec![ResourceStatus {
                name: "kv".into(),
                capacity: 4000.0,
                phase: Some("probe".into()),
            }],
            violated: vec!["A".into()],
            overcommitted: vec![],
        };
        let text = Metrics::default().render(0, &[], &[], &[(view, status)]);
        for line in [
            "tailbound_vdc_control_steps{vdc=\"dc\\\"1\"} 7\n",
            "tailbound_vdc_enforcers{vdc=\"dc\\\"1\",state=\"live\"} 2\n",
            "tailbound_vdc_enforcers{vdc=\"dc\\\"1\",state=\"stale\"} 1\n",
            "tailbound_vdc_flow_rate_tokens_per_second{vdc=\"dc\\\"1\",flow=\"A/a1\",hop=\"0\",resource=\"-\",part=\"total\"} 100\n",
            "tailbound_vdc_flow_rate_tokens_per_second{vdc=\"dc\\\"1\",flow=\"A/a1\",hop=\"1\",resource=\"kv\",part=\"guaranteed\"} 25\n",
            "tailbound_vdc_resource_capacity_tokens_per_second{vdc=\"dc\\\"1\",resource=\"kv\"} 4000\n",
            "tailbound_vdc_violated_tenants{vdc=\"dc\\\"1\"} 1\n",
            "tailbound_vdc_overcommitted_resources{vdc=\"dc\\\"1\"} 0\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        // a non-finite allocation is left out, never printed as NaN
        assert!(!text.contains("NaN"), "{text}");
        assert!(
            !text.contains("hop=\"1\",resource=\"kv\",part=\"total\""),
            "{text}"
        );
    }
}
