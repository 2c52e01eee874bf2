//! A small version of snc-meister's admission experiment replayed on the real testbed
//! (`tailbound experiment admission --testbed`): tenants drawn from production traces arrive
//! at a few client and server hosts ([`crate::admission`]'s draws, isolation test and
//! rotations), SNC-Meister decides from their first halves, and the admitted tenants' second
//! halves are replayed on namespaces, shaped links and real memcached — with and without
//! enforcement of the decisions, with and without an aggressor that ignores admission — beside
//! the simulator on the same requests and the admission bound (snc-meister §5–6, Fig. 2).
//!
//! What each combination shows: with enforcement every admitted tenant should meet its SLO
//! with or without the aggressor (its traffic is best effort below every tenant); without
//! enforcement the aggressor shares every FIFO queue with the tenants, which the bounds did not
//! allow for.

use crate::admission::AdmissionExperimentError;
use crate::admission::{
    build_run, characterize, check, run_seed, works, AdmissionConfig, Characterized, Run,
};
use crate::par_map;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tailbound_admission::{Admission, Policy};
use tailbound_dataplane::probe::Control;
use tailbound_model::ETHERNET_MTU_BYTES;
use tailbound_testbed::run::{Input, RunOptions};
use tailbound_testbed::{AggressorSpec, TestbedReport};

/// One way of running the admitted tenants on the testbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mode {
    /// the decisions applied on every host and switch port
    pub enforce: bool,
    /// the aggressor runs
    pub aggressor: bool,
}

impl Mode {
    /// Every combination, enforced first.
    pub const ALL: [Mode; 4] = [
        Mode {
            enforce: true,
            aggressor: false,
        },
        Mode {
            enforce: true,
            aggressor: true,
        },
        Mode {
            enforce: false,
            aggressor: false,
        },
        Mode {
            enforce: false,
            aggressor: true,
        },
    ];

    pub fn label(self) -> String {
        format!(
            "{}, {}",
            if self.enforce {
                "enforced"
            } else {
                "not enforced"
            },
            if self.aggressor {
                "aggressor"
            } else {
                "no aggressor"
            }
        )
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedConfig {
    /// the draws: traces, hosts, tenants, SLOs, speed-up, runs (each run its own seed)
    pub admission: AdmissionConfig,
    pub policy: Policy,
    /// link rates × scale, traces slowed down 1/scale times
    pub scale: f64,
    /// replay this much trace time of each held-out half [s]; `None`: all of it
    pub duration_s: Option<f64>,
    pub aggressor: AggressorSpec,
    pub modes: Vec<Mode>,
    /// the memcached executable
    pub memcached: std::path::PathBuf,
}

impl TestbedConfig {
    /// The small version on `traces`: 4 clients, 2 servers, 24 tenant draws, 3 runs,
    /// SNC-Meister, every mode, a UDP aggressor, traces sped up 5× and replayed at scale 0.2.
    pub fn small(traces: Vec<std::path::PathBuf>) -> TestbedConfig {
        let mut admission = AdmissionConfig::paper(traces);
        admission.clients = 4;
        admission.servers = 2;
        admission.tenants = 24;
        admission.runs = 3;
        admission.policies = vec![Policy::SncMeister];
        admission.opt_runs = 0;
        TestbedConfig {
            admission,
            policy: Policy::SncMeister,
            scale: 0.2,
            duration_s: None,
            aggressor: AggressorSpec {
                kind: tailbound_testbed::AggressorKind::Udp,
                target: None,
            },
            modes: Mode::ALL.to_vec(),
            memcached: std::path::PathBuf::from("memcached"),
        }
    }
}

/// One mode of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeRun {
    pub mode: Mode,
    pub report: TestbedReport,
}

/// One run: its draws, whom the policy admitted, and every mode on the testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedRun {
    pub run: usize,
    pub seed: u64,
    pub drawn: usize,
    pub admitted: usize,
    pub modes: Vec<ModeRun>,
}

/// One mode over all runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeSummary {
    pub mode: Mode,
    /// admitted tenants replayed, over all runs
    pub tenants: usize,
    /// of them, those whose testbed worst window missed the SLO
    pub violated: usize,
    /// runs with at least one violation
    pub runs_violated: usize,
    /// the largest worst window / SLO over all tenants
    pub worst_over_slo: f64,
    /// testbed p99.9 / simulator p99.9 over all tenants: median and quartiles
    pub ratio_median: Option<f64>,
    pub ratio_p25: Option<f64>,
    pub ratio_p75: Option<f64>,
    /// requests that failed or timed out, over all tenants
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestbedExperiment {
    pub config: TestbedConfig,
    pub runs: Vec<TestbedRun>,
    pub summary: Vec<ModeSummary>,
}

impl From<AdmissionExperimentError> for TestbedExperimentError {
    fn from(e: AdmissionExperimentError) -> Self {
        TestbedExperimentError::Admission(Box::new(e))
    }
}

impl From<tailbound_admission::AdmissionError> for TestbedExperimentError {
    fn from(e: tailbound_admission::AdmissionError) -> Self {
        TestbedExperimentError::Decide(Box::new(e))
    }
}

/// Why the experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum TestbedExperimentError {
    #[error(transparent)]
    Admission(Box<AdmissionExperimentError>),
    #[error(transparent)]
    Decide(Box<tailbound_admission::AdmissionError>),
    #[error("run {run} ({mode})")]
    Testbed {
        run: usize,
        mode: String,
        #[source]
        source: Box<tailbound_testbed::TestbedError>,
    },
}

/// What the progress callback hears.
#[derive(Debug, Clone, PartialEq)]
pub enum TestbedProgress {
    Characterized(usize),
    /// a run's tenants are decided
    Decided {
        run: usize,
        admitted: usize,
    },
    /// a mode of a run starts on the testbed
    Mode {
        run: usize,
        mode: Mode,
    },
}

/// Runs the experiment: runs one after another (one testbed at a time), each mode in order.
pub fn run(
    cfg: &TestbedConfig,
    progress: &(dyn Fn(TestbedProgress) + Sync),
) -> Result<TestbedExperiment, TestbedExperimentError> {
    let a = &cfg.admission;
    check(a)?;
    tailbound_testbed::topology::check_scale(cfg.scale).map_err(|source| {
        TestbedExperimentError::Testbed {
            run: 0,
            mode: "configuration".into(),
            source: Box::new(source),
        }
    })?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    let traces: Vec<Characterized> = par_map(&a.traces, a.threads, |p| {
        let c = characterize(p, a);
        progress(TestbedProgress::Characterized(
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        ));
        c
    })
    .into_iter()
    .collect::<Result<_, _>>()?;
    let mut runs = Vec::with_capacity(a.runs);
    for r in 0..a.runs {
        let seed = run_seed(a, r);
        let Run {
            network, requests, ..
        } = build_run(a, &traces, seed)?;
        let works = works(&network);
        let mut engine = Admission::new(&network, cfg.policy)?
            .with_excess(a.excess)
            .with_mtu(Some(ETHERNET_MTU_BYTES));
        for t in 0..network.tenants.len() {
            engine.arrive(t)?;
        }
        let decisions = engine.decisions();
        let mut bounds = vec![None; network.tenants.len()];
        for b in engine.bounds()? {
            bounds[b.tenant] = b.total.seconds();
        }
        let admitted = engine.admitted().len();
        progress(TestbedProgress::Decided { run: r, admitted });
        let input = Input {
            name: format!("admission run {r} (seed {seed})"),
            network: &network,
            works: &works,
            decisions: &decisions,
            requests: &requests,
            bounds: &bounds,
        };
        let options = |mode: Mode| {
            let mut o = RunOptions::default();
            o.topology.scale = cfg.scale;
            o.topology.aggressor = mode.aggressor.then(|| cfg.aggressor.clone());
            o.testbed.enforce = mode.enforce;
            o.testbed.memcached = cfg.memcached.clone();
            o.window_s = a.window_s;
            o.duration_s = cfg.duration_s;
            o
        };
        // every mode fits this machine, or none runs
        for &mode in &cfg.modes {
            tailbound_testbed::run::prepare(&input, &options(mode)).map_err(|source| {
                TestbedExperimentError::Testbed {
                    run: r,
                    mode: mode.label(),
                    source: Box::new(source),
                }
            })?;
        }
        let mut modes = Vec::with_capacity(cfg.modes.len());
        for &mode in &cfg.modes {
            progress(TestbedProgress::Mode { run: r, mode });
            let o = options(mode);
            let report = tailbound_testbed::run(&input, &o, &Arc::new(Control::new()), &|_| {})
                .map_err(|source| TestbedExperimentError::Testbed {
                    run: r,
                    mode: mode.label(),
                    source: Box::new(source),
                })?;
            modes.push(ModeRun { mode, report });
        }
        runs.push(TestbedRun {
            run: r,
            seed,
            drawn: network.tenants.len(),
            admitted,
            modes,
        });
    }
    let summary = cfg.modes.iter().map(|&m| summarize(m, &runs)).collect();
    Ok(TestbedExperiment {
        config: cfg.clone(),
        runs,
        summary,
    })
}

fn summarize(mode: Mode, runs: &[TestbedRun]) -> ModeSummary {
    let reports: Vec<&TestbedReport> = runs
        .iter()
        .flat_map(|r| r.modes.iter().filter(|m| m.mode == mode).map(|m| &m.report))
        .collect();
    let tenants: Vec<_> = reports.iter().flat_map(|r| &r.tenants).collect();
    let mut ratios: Vec<f64> = tenants.iter().filter_map(|t| t.testbed_over_sim).collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| {
        (!ratios.is_empty())
            .then(|| ratios[((q * ratios.len() as f64).ceil() as usize).clamp(1, ratios.len()) - 1])
    };
    ModeSummary {
        mode,
        tenants: tenants.len(),
        violated: tenants.iter().filter(|t| t.violated).count(),
        runs_violated: reports.iter().filter(|r| r.violated > 0).count(),
        worst_over_slo: tenants
            .iter()
            .map(|t| t.testbed_worst_window_s / t.slo_s)
            .fold(0.0, f64::max),
        ratio_median: at(0.5),
        ratio_p25: at(0.25),
        ratio_p75: at(0.75),
        failed: tenants.iter().map(|t| t.errors + t.timeouts).sum(),
    }
}
