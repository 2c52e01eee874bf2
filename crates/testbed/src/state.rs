//! A persistent testbed (`tailbound testbed up NAME` ... `down NAME`): built like a run's, left
//! running when the command ends, recorded in a state file, and torn down by `down`.
//!
//! The state file ([`state_path`], under `/run/tailbound/`, which a reboot clears along with
//! every namespace) holds the topology, the namespaces and each memcached's [`ProcessId`]; the
//! host map beside it ([`host_map_path`]) is what `tailbound enforce --hosts` reads. Both are
//! written whole or not at all (temporary file + rename). `down` stops the
//! recorded servers that are still those very processes, deletes the testbed's namespaces
//! (ending anything still inside) whether or not a state file exists (an `up` killed half-way
//! leaves none), removes the state file, and deletes the namespaces of dead runs.

use crate::memcached::{stop_recorded, ProcessId};
use crate::run::{prepare, sizes, Input, RunOptions};
use crate::testbed::Testbed;
use crate::topology::Topology;
use crate::TestbedError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tailbound_dataplane::netns;

/// Where state files live.
pub const STATE_DIR: &str = "/run/tailbound";

/// The default name of a persistent testbed.
pub const DEFAULT_NAME: &str = "tb";

/// The state file of testbed `name`.
pub fn state_path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join(format!("testbed-{name}.json"))
}

/// The host map of testbed `name` (for `tailbound enforce ... --hosts`).
pub fn host_map_path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join(format!("testbed-{name}.hosts.json"))
}

/// Checks a testbed name: 1 to 12 lowercase letters or digits.
pub fn check_name(name: &str) -> Result<(), TestbedError> {
    if (1..=12).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Ok(())
    } else {
        Err(TestbedError::Input(format!(
            "testbed name {name:?} is not allowed; use 1 to 12 lowercase letters or digits"
        )))
    }
}

/// What `up` left running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpState {
    pub name: String,
    pub scenario: String,
    pub policy: String,
    /// the host map
    pub topology: Topology,
    /// each host's namespace, in the topology's host order, then the switch's
    pub namespaces: Vec<String>,
    /// the memcached of each server host: (host index, process)
    pub servers: Vec<(usize, ProcessId)>,
    pub enforced: bool,
}

/// Builds `input`'s testbed under `name` and leaves it up; see the module docs.
pub fn up(input: &Input<'_>, opts: &RunOptions, name: &str) -> Result<UpState, TestbedError> {
    check_name(name)?;
    let p = prepare(input, opts)?;
    let mut testbed = opts.testbed.clone();
    testbed.persistent = Some(name.to_string());
    let bed = Testbed::up(&p.topology, &sizes(&p), &testbed)?;
    let mut state = UpState {
        name: name.to_string(),
        scenario: input.name.clone(),
        policy: input.decisions.policy.clone(),
        topology: p.topology.clone(),
        namespaces: bed.lan().names().into_iter().map(String::from).collect(),
        servers: Vec::new(),
        enforced: bed.enforced(),
    };
    // written before the testbed is kept: if this fails, dropping `bed` tears it down
    state.servers = bed.servers();
    let map = crate::enforce::host_map_json(bed.lan(), &p.topology)?;
    write_whole(&host_map_path(name), &map)?;
    write_state(&state)?;
    bed.keep();
    Ok(state)
}

fn write_state(state: &UpState) -> Result<(), TestbedError> {
    let path = state_path(&state.name);
    let text = serde_json::to_string_pretty(state).map_err(|e| TestbedError::State {
        path: path.clone(),
        message: e.to_string(),
    })?;
    write_whole(&path, &text)
}

/// Writes `text` to `path` whole or not at all (a temporary file renamed).
fn write_whole(path: &Path, text: &str) -> Result<(), TestbedError> {
    let err = |message: String| TestbedError::State {
        path: path.to_path_buf(),
        message,
    };
    std::fs::create_dir_all(STATE_DIR)
        .map_err(|e| err(format!("cannot create {STATE_DIR}: {e}")))?;
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, format!("{text}\n")).map_err(|e| err(format!("cannot write: {e}")))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(format!("cannot write: {e}"))
    })
}

/// The state of testbed `name`, if it is up.
pub fn read_state(name: &str) -> Result<Option<UpState>, TestbedError> {
    let path = state_path(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(TestbedError::State {
                path,
                message: format!("cannot read: {e}"),
            })
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| TestbedError::State {
            path,
            message: format!(
                "not a testbed state file ({e}); delete it and run `tailbound testbed down` again"
            ),
        })
}

/// What `down` removed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Down {
    /// memcached processes stopped by their recorded id
    pub stopped: Vec<u32>,
    /// the testbed's namespaces deleted
    pub namespaces: Vec<String>,
    /// namespaces of dead runs deleted
    pub stale: Vec<String>,
    /// a state file was there
    pub had_state: bool,
}

/// Tears down testbed `name` and the leftovers of dead runs; see the module docs.
pub fn down(name: &str) -> Result<Down, TestbedError> {
    check_name(name)?;
    let state = read_state(name)?;
    let mut out = Down {
        had_state: state.is_some(),
        ..Down::default()
    };
    if let Some(s) = &state {
        for (_, id) in &s.servers {
            if stop_recorded(*id) {
                out.stopped.push(id.pid);
            }
        }
    }
    out.namespaces = netns::delete_persistent(name)?;
    out.stale = netns::cleanup_stale()?;
    // the enforcer's records of namespaces that are gone (this testbed's, dead runs')
    crate::enforce::remove_stale_records();
    for path in [host_map_path(name), state_path(name)] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(TestbedError::State {
                    path,
                    message: format!("cannot remove: {e}"),
                })
            }
        }
    }
    Ok(out)
}
