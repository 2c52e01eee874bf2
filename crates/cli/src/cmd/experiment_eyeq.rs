//! `tailbound experiment eyeq`: EyeQ's throughput demo — a TCP tenant beside a bursty UDP
//! blaster, with and without EyeQ — and its memcached table (p50 and p99.9 alone, alone with
//! EyeQ, with interference, with interference and EyeQ), in the simulator. Exit 1 when one
//! of issue 23's checks fails (see `tailbound_experiments::eyeq`).

use super::{progress, ExperimentOutput};
use crate::table::render;
use crate::Outcome;
use clap::Args;
use tailbound_experiments::eyeq::{run, EyeqExperiment, EyeqSetup, Mode, Row, Simulator};
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
    /// the receiving host's link rate
    #[arg(long, default_value = "1Gbit")]
    pub link: BytesPerSec,
    /// every sending host's NIC rate
    #[arg(long, default_value = "10Gbit")]
    pub nic: BytesPerSec,
    /// EyeQ's capacity C as a fraction of the link rate
    #[arg(long, default_value_t = 0.98)]
    pub capacity: f64,
    /// the blaster's rate while on (EyeQ: 2.5 Gbit/s, on 5 ms, off 15 ms)
    #[arg(long, default_value = "2.5Gbit")]
    pub blaster_rate: BytesPerSec,
    /// (a) simulated time per run
    #[arg(long, default_value = "1s")]
    pub duration: Seconds,
    /// (a) time not counted towards the shares at the start of each run
    #[arg(long, default_value = "100ms")]
    pub warmup: Seconds,
    /// (b) simulated time per run
    #[arg(long, default_value = "4s")]
    pub latency_duration: Seconds,
    /// worker threads
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub output: ExperimentOutput,
}

impl EyeqArgs {
    /// The setup, checked before any run.
    fn setup(&self) -> anyhow::Result<EyeqSetup> {
        let setup = EyeqSetup {
            link_rate: self.link.0,
            nic_rate: self.nic.0,
            capacity_fraction: self.capacity,
            blaster_rate: self.blaster_rate.0,
            duration_s: self.duration.0,
            warmup_s: self.warmup.0,
            latency_duration_s: self.latency_duration.0,
            threads: self.threads,
            ..EyeqSetup::default()
        };
        setup.validate()?;
        Ok(setup)
    }
}

pub fn run_eyeq(a: EyeqArgs) -> anyhow::Result<Outcome> {
    let setup = a.setup()?;
    let runs = (a.seeds.len() * (a.modes.len() + a.rows.len())) as u64;
    let bar = progress(runs, a.output.json, "simulating");
    let exp = run(&Simulator, &setup, &a.seeds, &a.modes, &a.rows, || {
        bar.inc(1)
    })?;
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
