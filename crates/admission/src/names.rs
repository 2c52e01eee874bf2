//! The names of a network's hosts, queues, flows and tenants, kept as the network grows, so
//! that what is appended is checked against them by a lookup, not by a scan of every name
//! ([`tailbound_model::Network::validate_from_with`]).

use std::collections::HashSet;
use tailbound_model::{Network, NetworkSize};

#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    hosts: HashSet<String>,
    queues: HashSet<String>,
    flows: HashSet<String>,
    tenants: HashSet<String>,
}

impl Names {
    /// The names of every item of `net`.
    pub fn of(net: &Network) -> Names {
        let mut names = Names::default();
        names.add_from(net, NetworkSize::default());
        names
    }

    /// Whether a "host", "queue", "flow" or "tenant" (`what`) is named `name`.
    pub fn taken(&self, what: &str, name: &str) -> bool {
        match what {
            "host" => self.hosts.contains(name),
            "queue" => self.queues.contains(name),
            "flow" => self.flows.contains(name),
            _ => self.tenants.contains(name),
        }
    }

    /// Adds the names of `net`'s items past `from`.
    pub fn add_from(&mut self, net: &Network, from: NetworkSize) {
        self.hosts
            .extend(net.hosts.iter().skip(from.hosts).map(|h| h.name.clone()));
        self.queues
            .extend(net.queues.iter().skip(from.queues).map(|q| q.name.clone()));
        self.flows
            .extend(net.flows.iter().skip(from.flows).map(|f| f.name.clone()));
        self.tenants.extend(
            net.tenants
                .iter()
                .skip(from.tenants)
                .map(|t| t.name.clone()),
        );
    }

    /// Forgets the names of `net`'s items past `from` (about to be dropped).
    pub fn remove_from(&mut self, net: &Network, from: NetworkSize) {
        for h in net.hosts.iter().skip(from.hosts) {
            self.hosts.remove(&h.name);
        }
        for q in net.queues.iter().skip(from.queues) {
            self.queues.remove(&q.name);
        }
        for f in net.flows.iter().skip(from.flows) {
            self.flows.remove(&f.name);
        }
        for t in net.tenants.iter().skip(from.tenants) {
            self.tenants.remove(&t.name);
        }
    }

    /// Tenant `t` of `net` and its flows are about to be renamed: forgets their names.
    pub fn remove_tenant(&mut self, net: &Network, t: usize) {
        self.tenants.remove(&net.tenants[t].name);
        for &f in &net.tenants[t].flows {
            self.flows.remove(&net.flows[f].name);
        }
    }

    /// Adds the names of tenant `t` of `net` and of its flows.
    pub fn add_tenant(&mut self, net: &Network, t: usize) {
        self.tenants.insert(net.tenants[t].name.clone());
        for &f in &net.tenants[t].flows {
            self.flows.insert(net.flows[f].name.clone());
        }
    }
}
