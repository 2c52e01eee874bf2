//! Shared by the testbed tests: the root check, turns, a small scenario and its inputs.

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use tailbound_curves::WorkFunction;
use tailbound_dataplane::netns;
use tailbound_model::{Decisions, Excess, Request, TenantDecision};
use tailbound_scenario::Part;
use tailbound_scenario::Scenario;
use tailbound_testbed::run::Input;

static TURN: Mutex<()> = Mutex::new(());

/// The next test's turn, when this machine can run a testbed: root, iproute2 and memcached.
/// Otherwise `None` after saying why ("skipped"), or a failure under `CI=true`.
pub fn turn() -> Option<MutexGuard<'static, ()>> {
    if !tailbound_testdata::root_or_skip("the testbed") {
        return None;
    }
    let memcached = Command::new("memcached").arg("-V").output().is_ok();
    if !memcached {
        let why = "the testbed needs memcached";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{why}; under CI=true this test must run (run as root; apt-get install -y iproute2 memcached)"
        );
        eprintln!("skipped: {why}");
        return None;
    }
    Some(TURN.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The namespaces this test process owns now.
pub fn own_namespaces() -> Vec<String> {
    let prefix = format!("{}{}-", netns::PREFIX, std::process::id());
    netns::list()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Two hosts on 100 Mbit/s links, two tenants with 20 s synthetic traces (10 s replayed).
pub const SMALL: &str = r#"
[[hosts]]
name = "client1"
link = "100Mbit"

[[hosts]]
name = "server1"
link = "100Mbit"

[[tenants]]
name = "web"
client = "client1"
server = "server1"
slo = "20ms"
seed = 1
model = { arrival = { model = "poisson", rate_per_s = 100 }, sizes = { model = "exponential", mean_bytes = 4096 }, read_fraction = 0.9, duration_s = 20, vocabulary = "key_value" }

[[tenants]]
name = "kv"
client = "client1"
server = "server1"
slo = "50ms"
seed = 2
model = { arrival = { model = "poisson", rate_per_s = 50 }, sizes = { model = "choice", sizes = [1024, 65536] }, read_fraction = 0.5, duration_s = 20, vocabulary = "key_value" }
"#;

pub fn small() -> Scenario {
    tailbound_scenario::own::parse_toml(Path::new("small.toml"), SMALL).unwrap()
}

/// Every tenant admitted, priorities by SLO, no limits.
pub fn admit_all(s: &Scenario) -> Decisions {
    Decisions {
        policy: "all".into(),
        excess: Excess::Wait,
        tenants: s
            .network
            .tenants
            .iter()
            .map(|t| TenantDecision {
                name: t.name.clone(),
                admitted: true,
                priority: None,
                server: None,
                limits: Vec::new(),
            })
            .collect(),
    }
}

/// Each tenant's held-out half.
pub fn requests(s: &Scenario) -> Vec<Vec<Request>> {
    s.requests(Part::SecondHalf).unwrap()
}

/// The small scenario with every tenant admitted, its held-out halves and no bounds.
pub struct Small {
    pub scenario: Scenario,
    pub decisions: Decisions,
    pub requests: Vec<Vec<Request>>,
    pub bounds: Vec<Option<f64>>,
}

impl Small {
    pub fn new() -> Small {
        let scenario = small();
        Small {
            decisions: admit_all(&scenario),
            requests: requests(&scenario),
            bounds: vec![None; scenario.network.tenants.len()],
            scenario,
        }
    }

    /// The run's input; `works` is `self.scenario.works()`.
    pub fn input<'a>(&'a self, works: &'a [&'a dyn WorkFunction]) -> Input<'a> {
        Input {
            name: "small".into(),
            network: &self.scenario.network,
            works,
            decisions: &self.decisions,
            requests: &self.requests,
            bounds: &self.bounds,
        }
    }
}

/// The nice value in a `/proc/.../stat` file (field 19).
pub fn nice_in(stat: &Path) -> i32 {
    let text = std::fs::read_to_string(stat).unwrap();
    let (_, fields) = text.rsplit_once(") ").unwrap();
    fields.split_whitespace().nth(16).unwrap().parse().unwrap()
}

/// The nice values of this process's threads named `name`.
pub fn nice_of_threads(name: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            out.push(nice_in(&t.path().join("stat")));
        }
    }
    out
}
