//! The planner, the diff and the id allocator against the papers' construction and the
//! kernel's rules (a model of them here; the real kernel in tailbound-dataplane's tests).

mod diff;
mod fuzz;
mod kernel;
mod planner;
mod properties;

use tailbound_enforce_plan::{HostMap, Plan, PlanOptions, PriorAllocations, TcState};
use tailbound_model::Decisions;

/// Two end hosts and a switch; tenants t0..t9 run from `client` to `server`, each on its own
/// server port.
pub fn map_text(tenants: usize) -> String {
    let mut s = String::from(
        r#"
[[hosts]]
name = "client"
netns = "ns-client"
[[hosts.interfaces]]
name = "eth0"
address = "10.0.0.1"
link = "1Gbit"

[[hosts]]
name = "server"
netns = "ns-server"
[[hosts.interfaces]]
name = "eth0"
address = "10.0.0.2"
link = "1Gbit"

[[hosts]]
name = "switch"
role = "switch"
[[hosts.interfaces]]
name = "p-client"
link = "1Gbit"
"#,
    );
    for i in 0..tenants {
        s.push_str(&format!(
            "\n[[tenants]]\nname = \"t{i}\"\nclient = {{ host = \"client\" }}\nserver = {{ host = \"server\", port = {} }}\nprotocol = \"tcp\"\n",
            11211 + i
        ));
    }
    s
}

pub fn map(tenants: usize) -> HostMap {
    HostMap::parse(&map_text(tenants), "hosts.toml").expect("the test map is valid")
}

/// A tenant at `priority` with the given (stage, rate, burst) buckets.
pub use tailbound_testdata::tenant_decision as tenant;

pub use tailbound_testdata::decisions;

pub fn plan_of(d: &Decisions, m: &HostMap) -> Plan {
    tailbound_enforce_plan::plan(d, m, &PlanOptions::default(), &PriorAllocations::new())
        .expect("the test decisions plan")
}

/// The desired state of `host`'s first interface.
pub fn state<'a>(p: &'a Plan, host: &str) -> &'a TcState {
    &p.hosts
        .iter()
        .find(|h| h.host == host)
        .expect("host planned")
        .interfaces[0]
        .state
}

/// The allocations of a plan, to carry into the next one.
pub fn prior_of(p: &Plan) -> PriorAllocations {
    let mut prior = PriorAllocations::new();
    for h in &p.hosts {
        for i in &h.interfaces {
            prior.insert((h.host.clone(), i.interface.clone()), i.allocation.clone());
        }
    }
    prior
}
