//! `tailbound schema KIND`: the JSON Schema (draft-07) of one of tailbound's input files, for
//! editors (VS Code's `json.schemas`, taplo's `#:schema` in TOML) and validators. The schemas
//! are derived from the very types the readers deserialize (schemars), so they accept what
//! the readers accept, field for field; checks beyond the file's shape (known host names,
//! units in strings such as `"1Gbit"`, positive rates) stay with the readers.

use crate::Outcome;
use clap::Args;
use schemars::schema::RootSchema;

/// An input file whose schema `tailbound schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// a scenario in tailbound's own format (`bound`, `admit`, `place`, `simulate`, `testbed`)
    Scenario,
    /// a VDC file (`vdc check`, `vdc alloc`, `vdc serve`)
    Vdc,
    /// decisions (`admit`/`place --decisions-out`; `simulate`, `enforce`, `testbed --decisions`)
    Decisions,
    /// a host map (`enforce --hosts`)
    Hosts,
}

tailbound_model::names!(SchemaKind, "schema", {
    Scenario => "scenario",
    Vdc => "vdc",
    Decisions => "decisions",
    Hosts => "hosts",
});

impl SchemaKind {
    /// The schema of this kind of file.
    pub fn schema(self) -> RootSchema {
        let mut root = match self {
            SchemaKind::Scenario => tailbound_scenario::own::schema(),
            SchemaKind::Vdc => schemars::schema_for!(tailbound_allocation::VdcSpec),
            SchemaKind::Decisions => schemars::schema_for!(tailbound_model::Decisions),
            SchemaKind::Hosts => tailbound_enforce_plan::HostMap::schema(),
        };
        let metadata = root.schema.metadata();
        metadata.title = Some(format!("tailbound {}", self.as_str()));
        let toml = match self {
            SchemaKind::Decisions => "",
            _ => " A TOML file validates as the JSON value of its TOML.",
        };
        metadata.description = Some(format!(
            "{}; from {}.{toml}",
            self.what(),
            crate::output::TOOL
        ));
        root
    }

    fn what(self) -> &'static str {
        match self {
            SchemaKind::Scenario => "A scenario in tailbound's own format",
            SchemaKind::Vdc => "A virtual datacenter (Pulsar): servers, appliances, tenants",
            SchemaKind::Decisions => "The decisions of a policy over a set of tenants",
            SchemaKind::Hosts => "A host map: where the hosts of scenarios and decisions are",
        }
    }
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// the input file: scenario, vdc, decisions or hosts
    pub kind: SchemaKind,
}

pub fn run(a: SchemaArgs) -> anyhow::Result<Outcome> {
    let text = serde_json::to_string_pretty(&a.kind.schema())?;
    crate::output::print(&(text + "\n"))?;
    Ok(Outcome::Ok)
}
