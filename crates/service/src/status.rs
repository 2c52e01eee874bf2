//! The read-only status page (`GET /status`): plain server-rendered HTML, no script, refreshed
//! by the browser every few seconds: tenants with their bound now against their SLO, every
//! queue's mean load and headroom, the latest decisions, the hosted VDCs and their enforcers.

use crate::api::{AgentView, BoundView, Decision, DecisionKind, HostView};
use crate::vdc::VdcView;
use std::fmt::Write;
use tailbound_control::protocol::Status;

/// What the page shows.
#[derive(Debug, Clone)]
pub struct StatusView<'a> {
    pub policy: &'a str,
    pub seq: u64,
    pub hosts: &'a [HostView],
    pub bounds: &'a [BoundView],
    /// queue name, mean load as a fraction of its rate
    pub loads: &'a [(String, f64)],
    /// newest first
    pub decisions: &'a [Decision],
    /// host agents as last seen
    pub agents: &'a [AgentView],
    /// hosted VDCs with their controllers' status
    pub vdcs: &'a [(VdcView, Status)],
}

fn esc(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

fn ms(s: Option<f64>) -> String {
    s.map_or_else(|| "unbounded".into(), |v| format!("{:.3} ms", v * 1e3))
}

/// The page.
pub fn render(v: &StatusView<'_>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"5\"><title>tailbound status</title>\
         <style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;margin-bottom:1.5em}}\
         td,th{{border:1px solid #bbb;padding:.2em .6em;text-align:left}}.miss{{color:#b00}}</style>\
         </head><body><h1>tailbound status</h1>\
         <p id=\"summary\">policy {} · decision {} · {} hosts · {} admitted tenants</p>",
        esc(v.policy),
        v.seq,
        v.hosts.len(),
        v.bounds.len()
    );
    h.push_str("<h2>Tenants</h2><table id=\"tenants\"><tr><th>tenant</th><th>priority</th><th>SLO</th><th>bound now</th><th>headroom</th></tr>");
    for b in v.bounds {
        let headroom = b.bound_s.map_or("none".into(), |x| {
            format!("{:.1} %", (b.slo.latency_s - x) / b.slo.latency_s * 100.0)
        });
        let _ = write!(
            h,
            "<tr{}><td>{}</td><td>{}</td><td>p{} ≤ {}</td><td>{}</td><td>{}</td></tr>",
            if b.meets_slo { "" } else { " class=\"miss\"" },
            esc(&b.tenant),
            b.priority,
            b.slo.percentile,
            ms(Some(b.slo.latency_s)),
            ms(b.bound_s),
            headroom
        );
    }
    h.push_str("</table><h2>Queues</h2><table id=\"queues\"><tr><th>queue</th><th>mean load</th><th>headroom</th></tr>");
    for (q, l) in v.loads {
        let _ = write!(
            h,
            "<tr{}><td>{}</td><td>{:.1} %</td><td>{:.1} %</td></tr>",
            if *l >= 1.0 { " class=\"miss\"" } else { "" },
            esc(q),
            l * 100.0,
            (1.0 - l) * 100.0
        );
    }
    h.push_str("</table><h2>Host agents</h2><table id=\"agents\"><tr><th>host</th><th>applied</th><th>behind</th><th>last seen [ms since the epoch]</th></tr>");
    for a in v.agents {
        let _ = write!(
            h,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if a.behind > 0 { " class=\"miss\"" } else { "" },
            esc(&a.host),
            a.applied,
            a.behind,
            a.seen_ms
        );
    }
    h.push_str("</table><h2>Recent decisions</h2><table id=\"decisions\"><tr><th>#</th><th>kind</th><th>tenant</th><th>outcome</th><th>server</th><th>bound</th><th>reason</th></tr>");
    for d in v.decisions {
        let (kind, outcome) = match (d.kind, d.admitted) {
            (DecisionKind::Depart, _) => ("depart", "departed"),
            (DecisionKind::WhatIf, a) => (
                "what-if",
                if a {
                    "would be admitted"
                } else {
                    "would be rejected"
                },
            ),
            (DecisionKind::Arrive, true) => ("arrive", "admitted"),
            (DecisionKind::Arrive, false) => ("arrive", "rejected"),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{kind}</td><td>{}</td><td>{outcome}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            d.seq,
            esc(&d.tenant),
            esc(d.server.as_deref().unwrap_or("-")),
            if d.kind == DecisionKind::Depart { "-".into() } else { ms(d.bound_s) },
            esc(d.reason.as_deref().unwrap_or(""))
        );
    }
    h.push_str("</table><h2>VDCs</h2><table id=\"vdcs\"><tr><th>VDC</th><th>tenants</th><th>flows</th><th>control steps</th><th>enforcers</th><th>stale</th><th>overcommitted</th></tr>");
    for (view, st) in v.vdcs {
        let _ = write!(
            h,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if view.stale > 0 || !st.overcommitted.is_empty() { " class=\"miss\"" } else { "" },
            esc(&view.name),
            esc(&view.tenants.join(", ")),
            view.flows,
            view.epoch,
            view.enforcers,
            view.stale,
            esc(&st.overcommitted.join(", "))
        );
    }
    h.push_str("</table><h2>Enforcers</h2><table id=\"enforcers\"><tr><th>VDC</th><th>enforcer</th><th>flows</th><th>reports</th><th>silent</th><th>state</th></tr>");
    for (view, st) in v.vdcs {
        for e in &st.enforcers {
            let _ = write!(
                h,
                "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} s</td><td>{}</td></tr>",
                if e.stale { " class=\"miss\"" } else { "" },
                esc(&view.name),
                esc(&e.id),
                esc(&e.flows.join(", ")),
                e.reports,
                e.silent_s,
                if e.stale { "stale: keeps its last allocation" } else { "reporting" }
            );
        }
    }
    h.push_str("</table></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped() {
        assert_eq!(esc("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
    }
}
