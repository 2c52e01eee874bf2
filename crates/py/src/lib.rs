//! The Python module `tailbound`: tailbound's trace-to-bound pipeline for researchers who
//! script their analyses in Python.
//!
//! Thin bindings, no logic of their own: every function runs the same library job as the
//! `tailbound` command of the same name (`tailbound-report` builds both) and returns the
//! record that command prints with `--json`, as plain Python objects (dicts, lists, floats,
//! `None` for JSON's null): pandas-ready. Traces come back as numpy arrays when numpy is
//! installed, lists otherwise. Errors raise `ValueError` carrying the library's message, which
//! names the file, line or field and what is accepted; nothing panics across the boundary.
//! Long computations release the GIL. The type stubs live in `tailbound.pyi` beside this
//! crate's `Cargo.toml`; the tests in `tests/*.py` (pytest, run by `scripts/test.sh`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde::Serialize;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;
use tailbound_admission::{AdmissionState, Policy};
use tailbound_calculus::{BoundOptions, Method, ThetaSearch};
use tailbound_curves::mmpp::MmppFitOptions;
use tailbound_curves::StorageProfile;
use tailbound_experiments::bounds::{tenant_counts, vs_tenants, BoundsConfig, TenantWorkload};
use tailbound_model::{Decisions, Percentile, Stage, ETHERNET_MTU_BYTES};
use tailbound_report::{AdmitReport, AdmitTenant, BoundTenant, PriorityChange, ReplayOptions};
use tailbound_scenario::{Models, Part, Scenario};
use tailbound_sim::Transmission;
use tailbound_trace::Trace;

/// Largest decisions file [`replay`] reads whole [bytes] (as the CLI).
const MAX_DECISIONS_BYTES: u64 = 64 << 20;

/// `e`'s message and the messages of its sources not already in it.
fn message(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let m = s.to_string();
        if !msg.contains(&m) {
            msg = format!("{msg}: {m}");
        }
        source = s.source();
    }
    msg
}

/// A `ValueError` with [`message`].
fn value_error(e: &dyn std::error::Error) -> PyErr {
    PyValueError::new_err(message(e))
}

/// Parses `value` of the argument `arg` with the library's own parser.
fn parse<T: FromStr>(arg: &str, value: &str) -> PyResult<T>
where
    T::Err: Display,
{
    value
        .parse()
        .map_err(|e| PyValueError::new_err(format!("argument `{arg}`: {e}")))
}

/// `value` as Python objects: the JSON the CLI prints, parsed by Python's `json`.
fn to_py<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value)
        .map_err(|e| PyValueError::new_err(format!("cannot convert the result: {e}")))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// A scenario argument: a path (`str` or `os.PathLike`), or a `dict` in any of the file
/// formats, whose relative paths resolve against `base_dir` (default: the current folder).
enum Source {
    Path(PathBuf),
    Json { text: String, base: PathBuf },
}

impl Source {
    fn from_py(obj: &Bound<'_, PyAny>, base_dir: Option<PathBuf>) -> PyResult<Source> {
        if obj.is_instance_of::<PyDict>() {
            let text: String = obj
                .py()
                .import("json")?
                .call_method1("dumps", (obj,))?
                .extract()?;
            let base = match base_dir {
                Some(b) => b,
                None => std::env::current_dir().map_err(|e| value_error(&e))?,
            };
            return Ok(Source::Json { text, base });
        }
        obj.extract::<PathBuf>().map(Source::Path).map_err(|_| {
            PyValueError::new_err(
                "scenario: expected a path (str or os.PathLike) or a dict in a scenario format",
            )
        })
    }

    /// The name records carry: the path as given, or `<dict>`.
    fn name(&self) -> String {
        match self {
            Source::Path(p) => p.display().to_string(),
            Source::Json { .. } => "<dict>".into(),
        }
    }

    /// Runs `f` on a file holding the scenario: the path itself, or the dict written to a
    /// temporary file in the base folder (so relative trace paths resolve there), removed
    /// afterwards.
    fn with_file<R>(&self, f: impl FnOnce(&Path) -> PyResult<R>) -> PyResult<R> {
        match self {
            Source::Path(p) => f(p),
            Source::Json { text, base } => {
                let file = tempfile::Builder::new()
                    .prefix(".tailbound-scenario-")
                    .suffix(".json")
                    .tempfile_in(base)
                    .and_then(|mut t| {
                        std::io::Write::write_all(&mut t, text.as_bytes())?;
                        Ok(t)
                    })
                    .map_err(|e| {
                        PyValueError::new_err(format!(
                            "cannot write the scenario dict to a temporary file in {}: {e}; \
                             pass base_dir= a writable folder, or the scenario's path",
                            base.display()
                        ))
                    })?;
                f(file.path())
            }
        }
    }

    /// The scenario, loaded as `load` does from a file.
    fn load(
        &self,
        load: impl FnOnce(&Path) -> Result<Scenario, tailbound_scenario::ScenarioError>,
    ) -> PyResult<Scenario> {
        let name = self.name();
        self.with_file(|path| {
            load(path).map_err(|e| {
                let msg = message(&e);
                PyValueError::new_err(match self {
                    Source::Path(_) => msg,
                    // the temporary file's name means nothing to the caller
                    Source::Json { .. } => msg.replace(&path.display().to_string(), &name),
                })
            })
        })
    }
}

/// The chosen part of the trace at `path` and the storage profile (default: the bundled
/// Intel 710 SSD), as `tailbound curve` loads them.
fn load_trace(
    path: &Path,
    part: &str,
    profile: Option<PathBuf>,
) -> PyResult<(Trace, StorageProfile)> {
    let part: Part = parse("part", part)?;
    let full = tailbound_trace::read_trace(path).map_err(|e| value_error(&e))?;
    let trace = part.of(&full).map_err(|e| {
        PyValueError::new_err(format!("cannot take the {part} of {}: {e}", path.display()))
    })?;
    let profile = match profile {
        Some(p) => StorageProfile::load(&p).map_err(|e| value_error(&e))?,
        None => StorageProfile::intel710_ssd(),
    };
    Ok((trace, profile))
}

/// Reads a trace file (any format `tailbound` reads) into arrays.
#[pyfunction]
#[pyo3(signature = (path, part = "whole"))]
fn read_trace<'py>(py: Python<'py>, path: PathBuf, part: &str) -> PyResult<Bound<'py, PyDict>> {
    let (trace, _) = load_trace(&path, part, None)?;
    let arrival_s: Vec<f64> = trace.requests.iter().map(|r| r.arrival_s()).collect();
    let size_bytes: Vec<u64> = trace.requests.iter().map(|r| r.size_bytes).collect();
    let op: Vec<&str> = trace.requests.iter().map(|r| r.op.as_str()).collect();
    let out = PyDict::new(py);
    out.set_item("name", &trace.name)?;
    match py.import("numpy") {
        Ok(np) => {
            out.set_item(
                "arrival_s",
                np.call_method1("array", (arrival_s, "float64"))?,
            )?;
            out.set_item(
                "size_bytes",
                np.call_method1("array", (size_bytes, "uint64"))?,
            )?;
        }
        Err(_) => {
            out.set_item("arrival_s", PyList::new(py, arrival_s)?)?;
            out.set_item("size_bytes", PyList::new(py, size_bytes)?)?;
        }
    }
    out.set_item("op", PyList::new(py, op)?)?;
    Ok(out)
}

/// The r-b curve and arrival curve of a trace at one stage (`tailbound curve rb --json`).
#[pyfunction]
#[pyo3(signature = (path, stage, part = "whole", profile = None, prune = None))]
fn rb<'py>(
    py: Python<'py>,
    path: PathBuf,
    stage: &str,
    part: &str,
    profile: Option<PathBuf>,
    prune: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let stage: Stage = parse("stage", stage)?;
    if prune == Some(0) {
        return Err(PyValueError::new_err(
            "argument `prune`: 0 pieces; expected at least 1",
        ));
    }
    let (trace, profile) = load_trace(&path, part, profile)?;
    let name = path.display().to_string();
    let (report, _) = py
        .allow_threads(|| tailbound_report::rb(name, &trace, stage, &profile, prune))
        .map_err(|e| value_error(&e))?;
    to_py(py, &report)
}

/// An MMPP fitted to a trace's work at one stage (`tailbound curve mmpp --json`).
#[pyfunction]
#[pyo3(signature = (path, stage, part = "whole", profile = None, interval_s = None,
    step_s = None, band_factor = None, max_states = None, sizes = None, state_rate = None,
    batch_gap_s = None))]
#[allow(clippy::too_many_arguments)]
fn mmpp<'py>(
    py: Python<'py>,
    path: PathBuf,
    stage: &str,
    part: &str,
    profile: Option<PathBuf>,
    interval_s: Option<f64>,
    step_s: Option<f64>,
    band_factor: Option<f64>,
    max_states: Option<usize>,
    sizes: Option<&str>,
    state_rate: Option<&str>,
    batch_gap_s: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let stage: Stage = parse("stage", stage)?;
    let d = MmppFitOptions::default();
    let opts = MmppFitOptions {
        interval_s: interval_s.unwrap_or(d.interval_s),
        step_s: step_s.unwrap_or(d.step_s),
        band_factor: band_factor.unwrap_or(d.band_factor),
        max_states: max_states.unwrap_or(d.max_states),
        sizes: sizes.map_or(Ok(d.sizes), |s| parse("sizes", s))?,
        state_rate: state_rate.map_or(Ok(d.state_rate), |s| parse("state_rate", s))?,
        batch_gap_s: batch_gap_s.unwrap_or(d.batch_gap_s),
    };
    let (trace, profile) = load_trace(&path, part, profile)?;
    let name = path.display().to_string();
    let report = py
        .allow_threads(|| tailbound_report::mmpp(name, &trace, stage, &profile, &opts))
        .map_err(|e| {
            PyValueError::new_err(format!(
                "cannot fit an MMPP to {}: {}",
                path.display(),
                message(&e)
            ))
        })?;
    to_py(py, &report)
}

/// The least bucket-less shaper rate delaying a trace's work at one stage by at most
/// `delay_s` (`tailbound curve effbw --json`).
#[pyfunction]
#[pyo3(signature = (path, stage, delay_s, part = "whole", profile = None))]
fn effective_bandwidth<'py>(
    py: Python<'py>,
    path: PathBuf,
    stage: &str,
    delay_s: f64,
    part: &str,
    profile: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let stage: Stage = parse("stage", stage)?;
    let (trace, profile) = load_trace(&path, part, profile)?;
    let name = path.display().to_string();
    let report = py
        .allow_threads(|| tailbound_report::effbw(name, &trace, stage, &profile, delay_s))
        .map_err(|e| value_error(&e))?;
    to_py(py, &report)
}

/// Every tenant's latency bound (`tailbound bound --json`).
#[pyfunction]
#[pyo3(signature = (scenario, method = "snc-meister", percentile = None, theta = "brent",
    characterize = None, base_dir = None))]
fn bound<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    method: &str,
    percentile: Option<f64>,
    theta: &str,
    characterize: Option<&str>,
    base_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let method: Method = parse("method", method)?;
    let opts = BoundOptions {
        theta: parse("theta", theta)?,
        percentile: percentile
            .map(Percentile::new)
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("argument `percentile`: {e}")))?,
    };
    let flag: Option<Part> = characterize.map(|c| parse("characterize", c)).transpose()?;
    let source = Source::from_py(scenario, base_dir)?;
    let name = source.name();
    let report = py.allow_threads(|| {
        let scenario = source.load(|path| {
            let part = tailbound_report::characterized_part(path, flag)?;
            tailbound_scenario::load_part(path, tailbound_report::bound_models(method), part)
        })?;
        tailbound_report::bound(&scenario, name.clone(), method, &opts, &mut || {})
            .map_err(|e| PyValueError::new_err(format!("{name}: {}", message(&e))))
    })?;
    to_py(py, &report)
}

/// The tenants of a scenario arriving in file order (`tailbound admit --json`).
#[pyfunction]
#[pyo3(signature = (scenario, policy = "snc-meister", base_dir = None))]
fn admit<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    policy: &str,
    base_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let policy: Policy = parse("policy", policy)?;
    let source = Source::from_py(scenario, base_dir)?;
    let name = source.name();
    let report = py.allow_threads(|| {
        let scenario = source.load(tailbound_scenario::load)?;
        tailbound_report::admit(&scenario, name.clone(), policy)
            .map_err(|e| PyValueError::new_err(format!("{name}: {}", message(&e))))
    })?;
    to_py(py, &report)
}

/// Decisions from a dict (as `Admission.decisions()` returns) or a JSON file (as
/// `tailbound admit --decisions-out` writes), checked.
fn decisions_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Decisions> {
    let (text, what) = if obj.is_instance_of::<PyDict>() {
        let text: String = obj
            .py()
            .import("json")?
            .call_method1("dumps", (obj,))?
            .extract()?;
        (text, "decisions".to_string())
    } else {
        let path: PathBuf = obj.extract().map_err(|_| {
            PyValueError::new_err("decisions: expected a dict or a path to a decisions JSON file")
        })?;
        let too_big = std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_DECISIONS_BYTES);
        if too_big {
            return Err(PyValueError::new_err(format!(
                "{}: larger than {MAX_DECISIONS_BYTES} bytes; not a decisions file",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| {
            PyValueError::new_err(format!("cannot read decisions {}: {e}", path.display()))
        })?;
        (text, path.display().to_string())
    };
    let d: Decisions = serde_json::from_str(&text).map_err(|e| {
        PyValueError::new_err(format!(
            "{what}: not decisions ({e}); expected {{\"policy\": .., \"tenants\": [{{\"name\", \
             \"admitted\", \"priority\", \"server\", \"limits\": [{{\"flow\", \"stage\", \
             \"rate\", \"burst\"}}]}}]}}"
        ))
    })?;
    d.validate()
        .map_err(|e| PyValueError::new_err(format!("{what}: invalid decisions: {e}")))?;
    Ok(d)
}

/// A scenario's requests replayed through its queues under `decisions`
/// (`tailbound simulate --json`).
#[pyfunction]
#[pyo3(signature = (scenario, decisions = None, part = "second-half", mtu_bytes = Some(1500),
    window_s = 180.0, base_dir = None))]
fn replay<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyAny>,
    decisions: Option<&Bound<'py, PyAny>>,
    part: &str,
    mtu_bytes: Option<u64>,
    window_s: f64,
    base_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let transmission = match mtu_bytes {
        None => Transmission::Fluid,
        Some(m) if (64..=1 << 20).contains(&m) => Transmission::Chunked { mtu_bytes: m },
        Some(m) => {
            return Err(PyValueError::new_err(format!(
                "argument `mtu_bytes`: {m}; expected 64 to 1048576, or None for fluid service"
            )))
        }
    };
    if !(window_s.is_finite() && (1e-3..=1e9).contains(&window_s)) {
        return Err(PyValueError::new_err(format!(
            "argument `window_s`: {window_s}; expected 0.001 to 1e9 seconds"
        )));
    }
    let opts = ReplayOptions {
        part: parse("part", part)?,
        transmission,
        window_s,
    };
    let decisions = decisions.map(decisions_from_py).transpose()?;
    let source = Source::from_py(scenario, base_dir)?;
    let name = source.name();
    let (report, _) = py.allow_threads(|| {
        let scenario = source.load(|p| tailbound_scenario::load_with(p, Models::None))?;
        tailbound_report::replay(&scenario, name.clone(), decisions.as_ref(), &opts)
            .map_err(|e| PyValueError::new_err(format!("cannot replay {name}: {}", message(&e))))
    })?;
    to_py(py, &report)
}

/// snc-meister Fig. 7: tenant t0's bound vs the number of identical tenants sharing two
/// queues, per method (`tailbound experiment bounds-tenants --json`).
#[pyfunction]
#[pyo3(signature = (tenants = None, max_tenants = 30, step = 5, link_bytes_per_s = 125e6,
    seed = 1, percentile = 99.9, methods = None, theta = "brent"))]
#[allow(clippy::too_many_arguments)]
fn bounds_vs_tenants<'py>(
    py: Python<'py>,
    tenants: Option<Vec<usize>>,
    max_tenants: usize,
    step: usize,
    link_bytes_per_s: f64,
    seed: u64,
    percentile: f64,
    methods: Option<Vec<String>>,
    theta: &str,
) -> PyResult<Bound<'py, PyAny>> {
    const MAX: usize = 1000;
    let counts = tenants.unwrap_or_else(|| tenant_counts(max_tenants, step));
    if let Some(&n) = counts.iter().find(|&&n| n == 0 || n > MAX) {
        return Err(PyValueError::new_err(format!(
            "argument `tenants`: {n}; every count must be 1 to {MAX}"
        )));
    }
    if step == 0 {
        return Err(PyValueError::new_err(
            "argument `step`: 0; expected at least 1",
        ));
    }
    if !(link_bytes_per_s.is_finite() && link_bytes_per_s > 0.0) {
        return Err(PyValueError::new_err(format!(
            "argument `link_bytes_per_s`: {link_bytes_per_s}; expected a positive rate [bytes/s]"
        )));
    }
    let methods: Vec<Method> = match methods {
        Some(list) => list
            .iter()
            .map(|m| parse("methods", m))
            .collect::<PyResult<_>>()?,
        None => [
            "dnc",
            "snc-hop",
            "snc-conv",
            "snc-meister",
            "snc-martingale",
        ]
        .iter()
        .map(|m| parse("methods", m))
        .collect::<PyResult<_>>()?,
    };
    let cfg = BoundsConfig {
        workload: TenantWorkload::default(),
        link_bytes_per_s,
        seed,
        percentile: Percentile::new(percentile)
            .map_err(|e| PyValueError::new_err(format!("argument `percentile`: {e}")))?,
        methods,
        theta: parse::<ThetaSearch>("theta", theta)?,
    };
    let exp = py
        .allow_threads(|| vs_tenants(&cfg, &counts, || {}))
        .map_err(|e| value_error(&e))?;
    to_py(py, &exp)
}

/// A tenant named by its index in the scenario or by its name.
#[derive(FromPyObject)]
enum TenantRef {
    Index(usize),
    Name(String),
}

/// Admission control over a scenario's tenants: they arrive and depart in the order the
/// caller chooses; each arrival is admitted only if it and every tenant it can affect still
/// meet their SLOs.
#[pyclass(module = "tailbound", unsendable)]
struct Admission {
    scenario: Scenario,
    name: String,
    /// `None` only while an operation runs
    state: Option<AdmissionState>,
    /// the records of the arrivals so far, in arrival order
    arrivals: Vec<AdmitTenant>,
}

impl Admission {
    fn tenant(&self, t: &TenantRef) -> PyResult<usize> {
        let tenants = &self.scenario.network.tenants;
        match t {
            TenantRef::Index(i) if *i < tenants.len() => Ok(*i),
            TenantRef::Index(i) => Err(PyValueError::new_err(format!(
                "tenant {i}: the scenario has {} tenants (0 to {})",
                tenants.len(),
                tenants.len().saturating_sub(1)
            ))),
            TenantRef::Name(n) => tenants.iter().position(|t| &t.name == n).ok_or_else(|| {
                let known: Vec<&str> = tenants.iter().map(|t| t.name.as_str()).collect();
                PyValueError::new_err(format!(
                    "no tenant {n:?}; the scenario's tenants are {}",
                    known.join(", ")
                ))
            }),
        }
    }

    /// Runs `f` on the admission engine, keeping its state whatever `f` returns.
    fn with_engine<R>(
        &mut self,
        f: impl FnOnce(
            &mut tailbound_admission::Admission<'_>,
        ) -> Result<R, tailbound_admission::AdmissionError>,
    ) -> PyResult<R> {
        let state = self
            .state
            .take()
            .ok_or_else(|| PyValueError::new_err("the admission is in use"))?;
        let mut engine =
            match tailbound_admission::Admission::resume(&self.scenario.network, state.clone()) {
                Ok(e) => e,
                Err(e) => {
                    self.state = Some(state);
                    return Err(value_error(&e));
                }
            };
        let out = f(&mut engine);
        self.state = Some(engine.into_state());
        out.map_err(|e| value_error(&e))
    }
}

#[pymethods]
impl Admission {
    /// An empty system over the tenants of `scenario` (a path or a dict) under `policy`;
    /// bounds cover packets of `mtu_bytes` (None: fluid).
    #[new]
    #[pyo3(signature = (scenario, policy = "snc-meister", mtu_bytes = Some(ETHERNET_MTU_BYTES),
        base_dir = None))]
    fn new(
        scenario: &Bound<'_, PyAny>,
        policy: &str,
        mtu_bytes: Option<u64>,
        base_dir: Option<PathBuf>,
    ) -> PyResult<Admission> {
        let policy: Policy = parse("policy", policy)?;
        if mtu_bytes == Some(0) {
            return Err(PyValueError::new_err(
                "argument `mtu_bytes`: 0; expected a packet size > 0, or None for fluid",
            ));
        }
        let source = Source::from_py(scenario, base_dir)?;
        let scenario = source.load(tailbound_scenario::load)?;
        let state = tailbound_admission::Admission::new(&scenario.network, policy)
            .map_err(|e| value_error(&e))?
            .with_mtu(mtu_bytes)
            .into_state();
        Ok(Admission {
            scenario,
            name: source.name(),
            state: Some(state),
            arrivals: Vec::new(),
        })
    }

    /// The scenario's tenant names, in file order.
    #[getter]
    fn tenants(&self) -> Vec<String> {
        self.scenario
            .network
            .tenants
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The admitted tenants' names, in scenario order.
    #[getter]
    fn admitted(&mut self) -> PyResult<Vec<String>> {
        let admitted = self.with_engine(|e| Ok(e.admitted()))?;
        let tenants = &self.scenario.network.tenants;
        Ok(admitted.iter().map(|&t| tenants[t].name.clone()).collect())
    }

    /// `tenant` (index or name) arrives: the record `tailbound admit --json` prints for it.
    fn arrive<'py>(&mut self, py: Python<'py>, tenant: TenantRef) -> PyResult<Bound<'py, PyAny>> {
        let t = self.tenant(&tenant)?;
        let start = Instant::now();
        let outcome = self.with_engine(|e| e.arrive(t))?;
        let record = AdmitTenant::new(
            &self.scenario.network,
            &outcome,
            start.elapsed().as_secs_f64(),
        );
        let out = to_py(py, &record);
        self.arrivals.push(record);
        out
    }

    /// An admitted `tenant` departs: the tenants whose priority level changed.
    fn depart<'py>(&mut self, py: Python<'py>, tenant: TenantRef) -> PyResult<Bound<'py, PyAny>> {
        let t = self.tenant(&tenant)?;
        let changed = self.with_engine(|e| e.depart(t))?;
        to_py(py, &PriorityChange::list(&self.scenario.network, &changed))
    }

    /// The admitted tenants' bounds under the current priorities and rate limits (records
    /// as in `tailbound bound --json`).
    fn bounds<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let bounds = self.with_engine(|e| e.bounds())?;
        let records: Vec<BoundTenant> = bounds.iter().map(BoundTenant::new).collect();
        to_py(py, &records)
    }

    /// The decisions for every tenant that arrived (for `replay`, or `tailbound simulate
    /// --decisions`).
    fn decisions<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let d = self.with_engine(|e| Ok(e.decisions()))?;
        to_py(py, &d)
    }

    /// What `tailbound admit --json` prints after the arrivals so far.
    fn report<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (policy, decisions) = self.with_engine(|e| Ok((e.policy(), e.decisions())))?;
        let report = AdmitReport {
            scenario: self.name.clone(),
            policy: policy.as_str().to_string(),
            admitted: self.arrivals.iter().filter(|t| t.admitted).count(),
            tenants: self.arrivals.clone(),
            decisions,
        };
        to_py(py, &report)
    }

    fn __repr__(&mut self) -> PyResult<String> {
        let policy = self.with_engine(|e| Ok(e.policy()))?;
        Ok(format!(
            "Admission({:?}, policy={:?}, {} tenants, {} arrived)",
            self.name,
            policy.as_str(),
            self.scenario.network.tenants.len(),
            self.arrivals.len()
        ))
    }
}

/// tailbound: tail-latency bounds from traces (r-b curves, MMPP fits, SNC and DNC bounds,
/// admission control and replay).
#[pymodule]
#[pyo3(name = "tailbound")]
fn tailbound_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(rb, m)?)?;
    m.add_function(wrap_pyfunction!(mmpp, m)?)?;
    m.add_function(wrap_pyfunction!(effective_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(bound, m)?)?;
    m.add_function(wrap_pyfunction!(admit, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(bounds_vs_tenants, m)?)?;
    m.add_class::<Admission>()?;
    Ok(())
}
