//! `tailbound experiment eyeq`: EyeQ's throughput demo — a TCP tenant beside a bursty UDP
//! blaster, with and without EyeQ — and its memcached table (p50 and p99.9 alone, alone with
//! EyeQ, with interference, with interference and EyeQ), in the simulator or, with
//! `--testbed`, on real hosts (network namespaces, EyeQ's agents, memcached; needs root). Exit 1
//! when one of issue 23's checks fails (see `tailbound_experiments::eyeq`).

use super::{progress, ExperimentOutput};
use crate::table::render;
use crate::Outcome;
use clap::Args;
use tailbound_experiments::eyeq::{
    run, Backend, EyeqExperiment, EyeqSetup, Mode, Row, Simulator, Testbed,
};
use tailbound_model::units::{BytesPerSec, Seconds};
use tailbound_plot::{Chart, Figure, Scale, Series};

#[derive(Debug, Args)]
pub struct EyeqArgs {
    /// seeds (blaster phase and datagrams, memcached arrivals), comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1u64, 2, 3])]
    pub seeds: Vec<u64>,
    /// (a) enforcement modes: none, static (each tenant limited to its guarantee), eyeq
    #[arg(long, value_delimiter = ',', default_values = ["none", "static", "eyeq"])]
    pub modes: Vec<Mode>,
    /// (b) rows of the memcached table: alone, alone_eyeq, interference, interference_eyeq
    #[arg(long, value_delimiter = ',',
          default_values = ["alone", "alone_eyeq", "interference", "interference_eyeq"])]
    pub rows: Vec<Row>,
    /// run on real hosts (network namespaces on this machine, EyeQ's agents, memcached by
    /// PID; needs root) instead of the simulator; changes the defaults below to the testbed's
    /// (EyeQ's time constants × 50, rates ÷ 10)
    #[arg(long)]
    pub testbed: bool,
    /// the receiving host's link rate [default: 1Gbit; testbed 100Mbit]
    #[arg(long)]
    pub link: Option<BytesPerSec>,
    /// every sending host's NIC rate [default: 10Gbit; testbed 1Gbit]
    #[arg(long)]
    pub nic: Option<BytesPerSec>,
    /// EyeQ's capacity C as a fraction of the link rate
    #[arg(long, default_value_t = 0.98)]
    pub capacity: f64,
    /// the blaster's rate while on (EyeQ: 2.5 Gbit/s, on 5 ms, off 15 ms) [default: 2.5Gbit;
    /// testbed 250Mbit, on 250 ms, off 750 ms]
    #[arg(long)]
    pub blaster_rate: Option<BytesPerSec>,
    /// EyeQ's rate-controller period T; its other time constants scale with it [default:
    /// 200us (EyeQ's); testbed 10ms]
    #[arg(long)]
    pub interval: Option<Seconds>,
    /// (a) time per run [default: 1s; testbed 10s]
    #[arg(long)]
    pub duration: Option<Seconds>,
    /// (a) time not counted towards the shares at the start of each run [default: 100ms;
    /// testbed 1s]
    #[arg(long)]
    pub warmup: Option<Seconds>,
    /// (b) time per run [default: 4s; testbed 30s]
    #[arg(long)]
    pub latency_duration: Option<Seconds>,
    /// worker threads (the testbed runs one experiment at a time)
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub output: ExperimentOutput,
}

impl EyeqArgs {
    /// The setup, checked before any run.
    fn setup(&self) -> anyhow::Result<EyeqSetup> {
        let base = if self.testbed {
            EyeqSetup::testbed()
        } else {
            EyeqSetup::default()
        };
        let setup = EyeqSetup {
            link_rate: self.link.map_or(base.link_rate, |r| r.0),
            nic_rate: self.nic.map_or(base.nic_rate, |r| r.0),
            capacity_fraction: self.capacity,
            blaster_rate: self.blaster_rate.map_or(base.blaster_rate, |r| r.0),
            eyeq_interval_s: self.interval.map_or(base.eyeq_interval_s, |t| t.0),
            duration_s: self.duration.map_or(base.duration_s, |t| t.0),
            warmup_s: self.warmup.map_or(base.warmup_s, |t| t.0),
            latency_duration_s: self
                .latency_duration
                .map_or(base.latency_duration_s, |t| t.0),
            threads: if self.testbed { 1 } else { self.threads },
            ..base
        };
        setup.validate()?;
        Ok(setup)
    }
}

pub fn run_eyeq(a: EyeqArgs) -> anyhow::Result<Outcome> {
    let setup = a.setup()?;
    let runs = (a.seeds.len() * (a.modes.len() + a.rows.len())) as u64;
    let testbed = Testbed::default();
    let backend: &dyn Backend = if a.testbed {
        if !a.rows.is_empty() {
            tailbound_testbed::memcached::check_binary(&testbed.memcached)?;
        }
        &testbed
    } else {
        &Simulator
    };
    let what = if a.testbed { "running" } else { "simulating" };
    let bar = progress(runs, a.output.json, what);
    let exp = run(backend, &setup, &a.seeds, &a.modes, &a.rows, || bar.inc(1))?;
    bar.finish_and_clear();
    a.output.emit(&exp, || figure(&exp), || table(&exp))?;
    Ok(if exp.holds() {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn table(exp: &EyeqExperiment) -> String {
    let mut out = format!(
        "EyeQ on the {} ({} per run, guarantee {:.0} Mbit/s per tenant)\n\n",
        exp.backend,
        format_s(exp.setup.duration_s),
        exp.guarantee_bytes_per_s * 8e-6
    );
    let rows: Vec<Vec<String>> = exp
        .throughput
        .iter()
        .map(|m| {
            let mean = |f: fn(&tailbound_experiments::eyeq::ThroughputSeed) -> f64| {
                m.seeds.iter().map(f).sum::<f64>() / m.seeds.len().max(1) as f64
            };
            vec![
                m.mode.as_str().to_string(),
                m.seeds.len().to_string(),
                format!("{:.3}", m.share_of_guarantee),
                format!("{:.3}", m.min_share_of_guarantee),
                format!("{:.3}", mean(|s| s.share_of_guarantee_while_off)),
                format!("{:.3}", mean(|s| s.blaster_share_of_guarantee)),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out += "(a) TCP tenant beside the on/off UDP blaster: share of its guarantee\n";
        out += &render(
            &[
                "mode",
                "seeds",
                "TCP while on",
                "min over seeds",
                "TCP while off",
                "blaster while on",
            ],
            &rows,
        );
        out += "\n";
    }
    let rows: Vec<Vec<String>> = exp
        .latency
        .iter()
        .map(|r| {
            vec![
                r.row.as_str().to_string(),
                r.seeds.len().to_string(),
                format!("{:.0}", r.p50_s * 1e6),
                format!("{:.0}", r.p999_s * 1e6),
                r.seeds
                    .iter()
                    .map(|s| format!("{:.0}", s.p999_s * 1e6))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out += "(b) memcached-like tenant (6 KiB SETs): latency, mean over seeds\n";
        out += &render(
            &[
                "row",
                "seeds",
                "p50 [us]",
                "p99.9 [us]",
                "p99.9 per seed [us]",
            ],
            &rows,
        );
        out += "\n";
    }
    if let Some(f) = &exp.feedback {
        out += &format!(
            "EyeQ feedback: {:.0} messages/s, {:.0} B/s ({:.3} % of the link)\n",
            f.messages_per_s,
            f.bytes_per_s,
            f.fraction_of_link * 100.0
        );
        if let (Some(r), Some(s)) = (f.receiver_cpu_per_s, f.sender_cpu_per_s) {
            out += &format!(
                "EyeQ agents' CPU: receiver {:.1} ms/s, senders (with tc) {:.1} ms/s\n",
                r * 1e3,
                s * 1e3
            );
        }
    }
    for c in &exp.checks {
        out += &format!(
            "{} {} ({})\n",
            if c.holds { "ok  " } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    out
}

fn format_s(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s} s")
    }
}

/// (a): one panel per mode, the first seed's throughput over the first 200 ms; (b): p50
/// and p99.9 per row.
fn figure(exp: &EyeqExperiment) -> Figure {
    let mut charts = Vec::new();
    let bin_ms = exp.setup.bin_s * 1e3;
    for m in &exp.throughput {
        let Some(s) = m.seeds.first() else { continue };
        let points = |v: &[f64]| {
            v.iter()
                .enumerate()
                .take_while(|(k, _)| *k as f64 * bin_ms < 200.0)
                .map(|(k, r)| (k as f64 * bin_ms, r * 8e-9))
                .collect::<Vec<_>>()
        };
        charts.push(
            Chart::new(format!(
                "EyeQ (a), {}: TCP gets {:.2} of its guarantee while the blaster is on",
                m.mode.as_str(),
                s.share_of_guarantee
            ))
            .x_label("time [ms]")
            .y_label("throughput [Gbit/s]")
            .series(Series::step("TCP tenant", points(&s.tcp_rate)))
            .series(Series::step("UDP blaster", points(&s.blaster_rate))),
        );
    }
    if !exp.latency.is_empty() {
        let at = |f: fn(&tailbound_experiments::eyeq::LatencyRow) -> f64| {
            exp.latency
                .iter()
                .enumerate()
                .map(|(i, r)| ((i + 1) as f64, f(r) * 1e6))
                .collect::<Vec<_>>()
        };
        let names: Vec<&str> = exp.latency.iter().map(|r| r.row.as_str()).collect();
        charts.push(
            Chart::new(format!(
                "EyeQ (b): memcached latency; rows {}",
                names.join(", ")
            ))
            .x_label("row")
            .y_label("latency [us]")
            .y_scale(Scale::Log)
            .y_from_zero(false)
            .series(Series::points("p50", at(|r| r.p50_s)))
            .series(Series::points("p99.9", at(|r| r.p999_s))),
        );
    }
    Figure::new(charts).columns(2)
}
