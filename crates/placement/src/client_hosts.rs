//! WorkloadCompactor's client side: client hosts with VMs, and which VM a placed workload
//! runs on (its topology's `clientVMs`; `clientServerPlacement` in the original's
//! `PlacementController.cpp`).
//!
//! The original groups the workloads of a server onto one client host, "because their
//! performance is already correlated by sharing a server": a workload placed on server k
//! takes a free VM on the client host k's other workloads use; a server without workloads
//! takes the client host with the most free VMs (the first by name on a tie), and each VM is
//! the first free one by name. Requests then leave that host's NIC and enter the server's,
//! responses leave the server's NIC and enter the host's: each pair of NICs carries the same
//! flows at the same rate, so the second of a pair never queues
//! ([`crate::ClientNic::Tandem`]).
//!
//! One difference, so that this stays true: a client host serves one server at a time. When
//! a server's host has no free VM left, the server takes no further workload (the original
//! then moves the workload to the host with the most free VMs, whose NICs the two servers'
//! flows then share, and its two-hop analysis charges that interference). A new server takes
//! only a host no other server uses. With hosts at least as many as servers and VMs per host
//! at least the workloads a server holds (the original's example: 12 hosts of 15 VMs for 12
//! servers of at most 10 workloads) both rules give the same placement.

use crate::PlacementError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A client host and the VMs it can run workloads in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientHost {
    pub name: String,
    pub vms: Vec<String>,
}

/// The client VM a placed workload runs in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClientVm {
    pub host: String,
    pub vm: String,
}

/// The client hosts of a cluster, ordered by name, each with its VMs ordered by name (the
/// original keeps them in `std::map`/`std::set`, whose order decides ties).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientHosts {
    hosts: Vec<ClientHost>,
}

impl ClientHosts {
    /// Checks and orders `hosts`: every host and VM named, no host or VM of a host twice, at
    /// least one VM in all.
    pub fn new(mut hosts: Vec<ClientHost>) -> Result<ClientHosts, PlacementError> {
        let err = |m: String| Err(PlacementError::Config(m));
        hosts.sort_by(|a, b| a.name.cmp(&b.name));
        for w in hosts.windows(2) {
            if w[0].name == w[1].name {
                return err(format!(
                    "client host {:?} is listed twice; list each host once with all its VMs",
                    w[0].name
                ));
            }
        }
        for h in &mut hosts {
            if h.name.is_empty() {
                return err("a client host has an empty name; expected a host name".into());
            }
            h.vms.sort();
            if h.vms.iter().any(String::is_empty) {
                return err(format!(
                    "client host {:?} has a VM with an empty name; expected a VM name",
                    h.name
                ));
            }
            if let Some(w) = h.vms.windows(2).find(|w| w[0] == w[1]) {
                return err(format!(
                    "client VM {:?} of host {:?} is listed twice; each VM runs one workload",
                    w[0], h.name
                ));
            }
        }
        if hosts.iter().all(|h| h.vms.is_empty()) {
            return err("there is no client VM to run a workload in; expected at least one".into());
        }
        Ok(ClientHosts { hosts })
    }

    pub fn hosts(&self) -> &[ClientHost] {
        &self.hosts
    }

    /// All VMs of all hosts.
    pub fn vm_count(&self) -> usize {
        self.hosts.iter().map(|h| h.vms.len()).sum()
    }
}

/// Which client VMs are taken, and which server each client host serves.
#[derive(Debug, Clone)]
pub(crate) struct ClientState {
    hosts: ClientHosts,
    /// per host, its free VMs
    free: Vec<BTreeSet<String>>,
    /// per host, the server whose workloads it runs
    server_of: Vec<Option<usize>>,
    /// per server, its client host
    host_of: Vec<Option<usize>>,
}

impl ClientState {
    pub fn new(hosts: ClientHosts) -> ClientState {
        let free = hosts
            .hosts
            .iter()
            .map(|h| h.vms.iter().cloned().collect())
            .collect();
        let server_of = vec![None; hosts.hosts.len()];
        ClientState {
            hosts,
            free,
            server_of,
            host_of: Vec::new(),
        }
    }

    /// The client host a workload placed on `server` would run on, or `None` when it would
    /// need a VM that no host may give it (see the module docs).
    pub fn host_for(&self, server: usize) -> Option<usize> {
        if let Some(h) = self.host_of.get(server).copied().flatten() {
            return (!self.free[h].is_empty()).then_some(h);
        }
        let mut best: Option<usize> = None;
        for (h, free) in self.free.iter().enumerate() {
            if self.server_of[h].is_none()
                && !free.is_empty()
                && best.is_none_or(|b| free.len() > self.free[b].len())
            {
                best = Some(h);
            }
        }
        best
    }

    /// Takes the first free VM of host `h` for a workload on `server`.
    pub fn take(&mut self, h: usize, server: usize) -> Option<(usize, String)> {
        let vm = self.free[h].pop_first()?;
        self.server_of[h] = Some(server);
        if self.host_of.len() <= server {
            self.host_of.resize(server + 1, None);
        }
        self.host_of[server] = Some(h);
        Some((h, vm))
    }

    /// Frees `vm` of host `h`; `server_empty`: its server holds no workload any more, so the
    /// host serves no server.
    pub fn release(&mut self, h: usize, vm: String, server_empty: bool) {
        self.free[h].insert(vm);
        if server_empty {
            if let Some(s) = self.server_of[h].take() {
                if let Some(slot) = self.host_of.get_mut(s) {
                    *slot = None;
                }
            }
        }
    }

    pub fn vm(&self, h: usize, vm: &str) -> ClientVm {
        ClientVm {
            host: self.hosts.hosts[h].name.clone(),
            vm: vm.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(spec: &[(&str, &[&str])]) -> ClientHosts {
        ClientHosts::new(
            spec.iter()
                .map(|(n, vms)| ClientHost {
                    name: n.to_string(),
                    vms: vms.iter().map(|v| v.to_string()).collect(),
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn groups_a_servers_workloads_on_one_host_as_the_original() {
        let mut s = ClientState::new(hosts(&[
            ("c1", &["0", "1"]),
            ("c0", &["1", "0", "10", "2"]),
        ]));
        // the most free VMs: c0; its VMs in string order 0, 1, 10, 2
        assert_eq!(s.host_for(0), Some(0));
        assert_eq!(s.take(0, 0), Some((0, "0".into())));
        assert_eq!(s.take(0, 0), Some((0, "1".into())));
        assert_eq!(s.take(0, 0), Some((0, "10".into())));
        // server 1 may not use c0, though it has a VM left
        assert_eq!(s.host_for(1), Some(1));
        assert_eq!(s.take(1, 1), Some((1, "0".into())));
        assert_eq!(s.host_for(2), None, "every host serves a server");
        assert_eq!(s.host_for(0), Some(0));
        assert_eq!(s.take(0, 0), Some((0, "2".into())));
        assert_eq!(s.host_for(0), None, "server 0's host is full");
        // server 1 empties: c1 serves nobody and server 2 may take it
        s.release(1, "0".into(), true);
        assert_eq!(s.host_for(2), Some(1));
        assert_eq!(s.vm(1, "0").host, "c1");
    }

    #[test]
    fn bad_hosts_are_named() {
        let e = |spec: Vec<ClientHost>| ClientHosts::new(spec).unwrap_err().to_string();
        let h = |n: &str, vms: &[&str]| ClientHost {
            name: n.into(),
            vms: vms.iter().map(|v| v.to_string()).collect(),
        };
        assert!(e(vec![h("a", &["1"]), h("a", &["2"])]).contains("\"a\" is listed twice"));
        assert!(e(vec![h("a", &["1", "1"])]).contains("client VM \"1\" of host \"a\""));
        assert!(e(vec![h("a", &[])]).contains("no client VM"));
        assert!(e(vec![h("", &["1"])]).contains("empty name"));
    }
}
