//! `tailbound vdc`: the operator's own virtual datacenters (pulsar §3–§5).
//!
//! * `tailbound vdc check VDC_FILE [--json]` — parse and validate, show every flow's path.
//! * `tailbound vdc alloc VDC_FILE [--demand TENANT/FLOW=RATE]... [--global hdrf] [--json]` —
//!   both allocation steps (local per tenant, global over spare capacity) with every flow
//!   backlogged unless its demand is given; exit 1 when guarantees exceed a resource.
//! * `tailbound vdc serve VDC_FILE --listen ADDR` — Pulsar's controller as a service for the
//!   enforcers (`tailbound vdc enforcer --controller URL`); protocol in `tailbound_control`.

use super::print_json;
use crate::report::{VdcAllocFlow, VdcAllocHop, VdcAllocReport, VdcAllocResource};
use crate::table::render;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tailbound_allocation::steps::backlogged_demand;
use tailbound_allocation::vdc::{Charge, Datacenter};
use tailbound_allocation::{allocate_vdc, ControllerConfig, Mechanism, VdcSpec};
use tailbound_control::protocol::flow_name;
use tailbound_control::{ControlConfig, ControlState, Service};
use tailbound_dataplane::clock::{Clock, MonotonicClock};
use tailbound_model::units::Seconds;

#[derive(Debug, Subcommand)]
pub enum VdcCommand {
    /// Parse and validate a VDC file; show resources, tenants and every flow's path
    Check(CheckArgs),
    /// Allocate a VDC file's resources (local and global steps) for given or backlogged
    /// demands
    Alloc(AllocArgs),
    /// Run Pulsar's controller for a VDC file, serving the enforcers over HTTP/JSON
    Serve(ServeArgs),
    /// Run Pulsar's rate enforcer as a proxy in front of a memcached
    Enforcer(super::enforcer::EnforcerArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// VDC spec, TOML (`.toml`) or JSON (see tailbound_allocation::vdc for the format)
    #[arg(value_name = "VDC_FILE")]
    pub file: PathBuf,
    /// print the compiled datacenter as JSON
    #[arg(long)]
    pub json: bool,
}

/// `TENANT/FLOW=RATE`: a flow's demand on every hop [tokens/s].
#[derive(Debug, Clone, PartialEq)]
pub struct DemandArg {
    pub flow: String,
    pub rate: f64,
}

fn demand_arg(s: &str) -> Result<DemandArg, String> {
    let (flow, rate) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not TENANT/FLOW=RATE (e.g. B/b1-kv=2e6)"))?;
    let rate: f64 = rate
        .parse()
        .map_err(|_| format!("{rate:?} is not a rate in tokens/s (e.g. 2e6)"))?;
    if !(rate.is_finite() && rate >= 0.0) {
        return Err(format!("demand {rate} must be finite and >= 0 [tokens/s]"));
    }
    Ok(DemandArg {
        flow: flow.to_string(),
        rate,
    })
}

#[derive(Debug, Args)]
pub struct AllocArgs {
    #[arg(value_name = "VDC_FILE")]
    pub file: PathBuf,
    /// a flow's demand on every hop of its path [tokens/s]; flows not named are backlogged
    /// (they want more than any resource on their path has); repeatable
    #[arg(long, value_name = "TENANT/FLOW=RATE", value_parser = demand_arg)]
    pub demand: Vec<DemandArg>,
    /// the provider's global mechanism (eq. 3)
    #[arg(long, default_value = "hdrf")]
    pub global: Mechanism,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[arg(value_name = "VDC_FILE")]
    pub file: PathBuf,
    /// where enforcers reach the controller
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7600")]
    pub listen: SocketAddr,
    /// control interval (pulsar: 1 s)
    #[arg(long, default_value = "1s")]
    pub interval: Seconds,
    /// the provider's global mechanism (eq. 3; pulsar's experiments: hdrf)
    #[arg(long, default_value = "hdrf")]
    pub global: Mechanism,
    /// use the appliances' configured capacities instead of estimating them (§4.3)
    #[arg(long)]
    pub no_estimate: bool,
    /// weight of the newest interval in the demand's moving average, in (0, 1]
    #[arg(long, default_value_t = 0.5)]
    pub demand_gain: f64,
    /// fraction of every link kept out of the allocations (pulsar §5: 2-5%)
    #[arg(long, default_value_t = 0.05)]
    pub link_headroom: f64,
    /// sub-interval samples per report (the estimators' consistent readings)
    #[arg(long, default_value_t = 10)]
    pub samples: u32,
    /// the smallest rate an enforcer gives a hop, so new demand can show [tokens/s]
    #[arg(long, default_value_t = 1e5)]
    pub min_rate: f64,
    /// unused tokens an enforcer keeps across an allocation update
    #[arg(long, default_value = "100ms")]
    pub carry: Seconds,
    /// intervals without a report before an enforcer is flagged stale
    #[arg(long, default_value_t = 3)]
    pub stale_after: u32,
}

pub fn run(c: VdcCommand) -> anyhow::Result<Outcome> {
    match c {
        VdcCommand::Check(a) => check(a),
        VdcCommand::Alloc(a) => alloc(a),
        VdcCommand::Serve(a) => serve(a),
        VdcCommand::Enforcer(a) => super::enforcer::run(a),
    }
}

/// Reads and compiles a VDC file; errors name the file, tenant and field.
pub fn load_vdc(path: &Path) -> anyhow::Result<Datacenter> {
    let name = path.display().to_string();
    let text = super::read_input(path, "VDC file")?;
    let (_, dc) = VdcSpec::parse(&name, &text)?;
    Ok(dc)
}

fn rate_cell(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.4e}")
    }
}

/// `physical/virtual` names of a hop.
fn hop_names(dc: &Datacenter, flow: usize, h: usize) -> (String, String, &'static str) {
    let f = &dc.flows[flow];
    let hop = &f.hops[h];
    let t = &dc.tenants[f.tenant];
    let p = hop
        .physical
        .map_or("-".into(), |p| dc.resources[p].name.clone());
    let v = hop
        .virtual_resource
        .map_or("-".into(), |v| t.virtuals[v].name.clone());
    let charge = match hop.charge {
        Charge::Request => "request",
        Charge::Response => "response",
        Charge::Appliance(_) => "appliance",
    };
    (p, v, charge)
}

fn check(a: CheckArgs) -> anyhow::Result<Outcome> {
    let dc = load_vdc(&a.file)?;
    if a.json {
        print_json(&dc)?;
        return Ok(Outcome::Ok);
    }
    let mut text = String::new();
    let rows: Vec<Vec<String>> = dc
        .resources
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                rate_cell(r.capacity),
                rate_cell(r.max_capacity),
                if r.estimate { "estimated" } else { "fixed" }.into(),
            ]
        })
        .collect();
    text.push_str(&render(
        &[
            "resource",
            "capacity [tokens/s]",
            "max [tokens/s]",
            "capacity",
        ],
        &rows,
    ));
    text.push('\n');
    let rows: Vec<Vec<String>> = dc
        .tenants
        .iter()
        .flat_map(|t| {
            t.virtuals.iter().map(move |v| {
                vec![
                    t.name.clone(),
                    format!("{:?}", t.guarantee).to_lowercase(),
                    v.name.clone(),
                    rate_cell(v.guarantee),
                    v.max.map_or("-".into(), rate_cell),
                ]
            })
        })
        .collect();
    text.push_str(&render(
        &[
            "tenant",
            "kind",
            "virtual resource",
            "guarantee [tokens/s]",
            "max [tokens/s]",
        ],
        &rows,
    ));
    text.push('\n');
    let rows: Vec<Vec<String>> = (0..dc.flows.len())
        .map(|i| {
            let path: Vec<String> = (0..dc.flows[i].hops.len())
                .map(|h| {
                    let (p, v, _) = hop_names(&dc, i, h);
                    if v == "-" {
                        p
                    } else {
                        format!("{p}({v})")
                    }
                })
                .collect();
            vec![flow_name(&dc, i), path.join(" → ")]
        })
        .collect();
    text.push_str(&render(&["flow", "path: physical(virtual) per hop"], &rows));
    text.push_str(&format!(
        "\n{}: {} servers, {} appliances, {} tenants, {} flows: valid\n",
        a.file.display(),
        dc.servers.len(),
        dc.appliance_resource.len(),
        dc.tenants.len(),
        dc.flows.len()
    ));
    crate::output::print(&text)?;
    Ok(Outcome::Ok)
}

fn alloc(a: AllocArgs) -> anyhow::Result<Outcome> {
    let dc = load_vdc(&a.file)?;
    let names: Vec<String> = (0..dc.flows.len()).map(|i| flow_name(&dc, i)).collect();
    let mut demand = backlogged_demand(&dc);
    for d in &a.demand {
        let Some(i) = names.iter().position(|n| *n == d.flow) else {
            bail!(
                "--demand {}={}: no flow {:?} in {}; flows: {}",
                d.flow,
                d.rate,
                d.flow,
                a.file.display(),
                names.join(", ")
            );
        };
        demand[i].iter_mut().for_each(|x| *x = d.rate);
    }
    let capacity: Vec<f64> = dc.resources.iter().map(|r| r.capacity).collect();
    let out = allocate_vdc(&dc, &demand, &capacity, a.global)?;
    let mut allocated = vec![0.0; dc.resources.len()];
    let flows: Vec<VdcAllocFlow> = (0..dc.flows.len())
        .map(|i| VdcAllocFlow {
            flow: names[i].clone(),
            hops: (0..dc.flows[i].hops.len())
                .map(|h| {
                    let (physical, virtual_resource, charge) = hop_names(&dc, i, h);
                    if let Some(j) = dc.flows[i].hops[h].physical {
                        allocated[j] += out.rates[i][h];
                    }
                    VdcAllocHop {
                        physical,
                        virtual_resource,
                        charge: charge.into(),
                        demand: demand[i][h],
                        local: out.local_rates[i][h],
                        rate: out.rates[i][h],
                    }
                })
                .collect(),
        })
        .collect();
    let report = VdcAllocReport {
        file: a.file.display().to_string(),
        global: a.global.to_string(),
        flows,
        resources: dc
            .resources
            .iter()
            .enumerate()
            .map(|(j, r)| VdcAllocResource {
                name: r.name.clone(),
                capacity: r.capacity,
                allocated: allocated[j],
            })
            .collect(),
        overcommitted: out
            .overcommitted
            .iter()
            .map(|&j| dc.resources[j].name.clone())
            .collect(),
    };
    if a.json {
        print_json(&report)?;
    } else {
        let mut text = String::new();
        let rows: Vec<Vec<String>> = report
            .flows
            .iter()
            .flat_map(|f| {
                f.hops.iter().map(move |h| {
                    vec![
                        f.flow.clone(),
                        h.physical.clone(),
                        h.virtual_resource.clone(),
                        h.charge.clone(),
                        rate_cell(h.demand),
                        rate_cell(h.local),
                        rate_cell(h.rate),
                    ]
                })
            })
            .collect();
        text.push_str(&render(
            &[
                "flow",
                "physical",
                "virtual",
                "charge",
                "demand [tokens/s]",
                "guaranteed [tokens/s]",
                "allocated [tokens/s]",
            ],
            &rows,
        ));
        text.push('\n');
        let rows: Vec<Vec<String>> = report
            .resources
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    rate_cell(r.capacity),
                    rate_cell(r.allocated),
                    format!(
                        "{:.1}",
                        100.0 * r.allocated / r.capacity.max(f64::MIN_POSITIVE)
                    ),
                ]
            })
            .collect();
        text.push_str(&render(
            &[
                "resource",
                "capacity [tokens/s]",
                "allocated [tokens/s]",
                "used [%]",
            ],
            &rows,
        ));
        crate::output::print(&text)?;
        if !report.overcommitted.is_empty() {
            eprintln!(
                "guarantees exceed the capacity of {}: those VDCs cannot all be met",
                report.overcommitted.join(", ")
            );
        }
    }
    Ok(if report.overcommitted.is_empty() {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn serve(a: ServeArgs) -> anyhow::Result<Outcome> {
    let dc = load_vdc(&a.file)?;
    let interval_ns = (a.interval.0 * 1e9).round();
    if !(1e6..=3.6e12).contains(&interval_ns) {
        bail!("--interval {} s: use 1ms to 1h", a.interval.0);
    }
    let cfg = ControlConfig {
        controller: ControllerConfig {
            interval_ns: interval_ns as u64,
            global: a.global,
            demand_gain: a.demand_gain,
            estimate_capacity: !a.no_estimate,
            link_headroom: a.link_headroom,
            ..ControllerConfig::default()
        },
        samples_per_interval: a.samples,
        min_rate: a.min_rate,
        carry_s: a.carry.0,
        stale_after: a.stale_after,
    };
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
    let flows = dc.flows.len();
    let state =
        ControlState::new(dc, cfg, clock.now_ns()).context("invalid controller settings")?;
    let service = Service::new(state, clock);
    let rt = super::enforcer::runtime()?;
    rt.block_on(async {
        let stop = super::enforcer::stop_signal()?;
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .with_context(|| format!("cannot listen on {} (--listen)", a.listen))?;
        eprintln!(
            "controller: {} ({flows} flows) on http://{}, a step every {} s; Ctrl-C stops",
            a.file.display(),
            listener.local_addr()?,
            a.interval.0
        );
        tailbound_control::server::serve(listener, service, stop)
            .await
            .context("controller server")?;
        eprintln!("controller: stopped");
        Ok(Outcome::Ok)
    })
}
