//! The service's state in SQLite: hosts, admitted tenants with their grants, the decision log
//! and the placer's event log. WAL journal, `synchronous = FULL`: a decision is on disk when
//! [`Store::commit`] returns, and the service answers only after that. A `kill -9` at any
//! point leaves either the whole decision or none of it.
//!
//! Schema versions live in `schema_version`; [`MIGRATIONS`] brings an older database up to
//! date in one transaction, and a database from a newer tailbound is refused.

use crate::api::{Decision, HostView};
use crate::error::ServiceError;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// Migration `i` brings the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE hosts (
        seq INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        link_bytes_per_s REAL NOT NULL,
        storage_rate REAL
    );
    -- admitted tenants only; a departure deletes the row
    CREATE TABLE tenants (
        seq INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        record TEXT NOT NULL,
        grant_json TEXT NOT NULL,
        token_sha256 TEXT NOT NULL
    );
    CREATE TABLE decisions (
        seq INTEGER PRIMARY KEY,
        tenant TEXT NOT NULL,
        kind TEXT NOT NULL,
        admitted INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX decisions_tenant ON decisions (tenant, seq);
    -- the placer's arrivals and departures, replayed in order at start-up
    CREATE TABLE placements (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        workload TEXT
    );
",
    "
    -- Pulsar VDCs: the file (JSON of tailbound_allocation::VdcSpec), the controller's
    -- settings, and its durable state (JSON of tailbound_control::Snapshot) after each step
    -- and registration
    CREATE TABLE vdcs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        spec TEXT NOT NULL,
        settings TEXT NOT NULL,
        snapshot TEXT
    );
",
    "
    -- host agents' tokens (SHA-256), one per host: a new one replaces the old
    CREATE TABLE host_tokens (
        host TEXT PRIMARY KEY,
        token_sha256 TEXT NOT NULL
    );
",
];

/// An admitted tenant as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRow {
    /// the decision that admitted it
    pub seq: u64,
    pub name: String,
    /// JSON of [`crate::engine::TenantRecord`]
    pub record: String,
    /// JSON of `tailbound_admission::Grant`
    pub grant: String,
    pub token_sha256: String,
}

/// One event of the placer's log: an arrival (with the workload's JSON) or a departure.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacementEvent {
    pub tenant: String,
    /// JSON of `tailbound_placement::Workload`; `None`: a departure
    pub workload: Option<String>,
}

/// A hosted VDC as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct VdcRow {
    pub name: String,
    /// JSON of `tailbound_allocation::VdcSpec`
    pub spec: String,
    /// JSON of [`crate::vdc::VdcSettings`]
    pub settings: String,
    /// JSON of `tailbound_control::Snapshot`; `None` before its first step was stored
    pub snapshot: Option<String>,
}

/// Everything one decision changes, committed in one transaction.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub decision: Option<Decision>,
    pub insert_tenant: Option<TenantRow>,
    pub delete_tenant: Option<String>,
    pub placements: Vec<PlacementEvent>,
    pub insert_host: Option<HostView>,
}

/// The open database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating it if needed) and migrates the database at `path`.
    ///
    /// # Errors
    /// The database cannot be opened, is not a tailbound database, or is newer than this
    /// build.
    pub fn open(path: &Path) -> Result<Store, ServiceError> {
        let conn = Connection::open(path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(ServiceError::Internal(format!(
                "database {}: journal mode is {mode:?}, WAL could not be set",
                path.display()
            )));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;")?;
        let mut store = Store { conn };
        store.migrate(path)?;
        Ok(store)
    }

    fn migrate(&mut self, path: &Path) -> Result<(), ServiceError> {
        let tx = self.conn.transaction()?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
        let version: Option<i64> = tx
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .optional()?;
        let version = match version {
            Some(v) => usize::try_from(v).unwrap_or(usize::MAX),
            None => {
                tx.execute("INSERT INTO schema_version (version) VALUES (0)", [])?;
                0
            }
        };
        if version > MIGRATIONS.len() {
            return Err(ServiceError::Internal(format!(
                "database {} has schema version {version}; this tailbound knows up to {}: use a newer tailbound",
                path.display(),
                MIGRATIONS.len()
            )));
        }
        for sql in &MIGRATIONS[version..] {
            tx.execute_batch(sql)?;
        }
        tx.execute(
            "UPDATE schema_version SET version = ?1",
            params![MIGRATIONS.len() as i64],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The schema version.
    pub fn schema_version(&self) -> Result<u64, ServiceError> {
        let v: i64 = self
            .conn
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))?;
        Ok(v.max(0) as u64)
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>, ServiceError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), ServiceError> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Hosts in registration order.
    pub fn hosts(&self) -> Result<Vec<HostView>, ServiceError> {
        let mut st = self
            .conn
            .prepare("SELECT name, link_bytes_per_s, storage_rate FROM hosts ORDER BY seq")?;
        let rows = st.query_map([], |r| {
            Ok(HostView {
                name: r.get(0)?,
                link_bytes_per_s: r.get(1)?,
                storage_rate: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Admitted tenants in admission order.
    pub fn tenants(&self) -> Result<Vec<TenantRow>, ServiceError> {
        let mut st = self.conn.prepare(
            "SELECT seq, name, record, grant_json, token_sha256 FROM tenants ORDER BY seq",
        )?;
        let rows = st.query_map([], |r| {
            Ok(TenantRow {
                seq: r.get::<_, i64>(0)?.max(0) as u64,
                name: r.get(1)?,
                record: r.get(2)?,
                grant: r.get(3)?,
                token_sha256: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The placer's log in order.
    pub fn placements(&self) -> Result<Vec<PlacementEvent>, ServiceError> {
        let mut st = self
            .conn
            .prepare("SELECT tenant, workload FROM placements ORDER BY seq")?;
        let rows = st.query_map([], |r| {
            Ok(PlacementEvent {
                tenant: r.get(0)?,
                workload: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The latest decision's number (0: none yet).
    pub fn last_seq(&self) -> Result<u64, ServiceError> {
        let v: Option<i64> = self
            .conn
            .query_row("SELECT MAX(seq) FROM decisions", [], |r| r.get(0))?;
        Ok(v.unwrap_or(0).max(0) as u64)
    }

    /// Decisions after `since`, oldest first, at most `limit`; only `tenant`'s when given.
    pub fn decisions(
        &self,
        since: u64,
        limit: u64,
        tenant: Option<&str>,
    ) -> Result<Vec<Decision>, ServiceError> {
        let since = i64::try_from(since).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut st = self.conn.prepare(
            "SELECT body FROM decisions WHERE seq > ?1 AND (?2 IS NULL OR tenant = ?2)
             ORDER BY seq LIMIT ?3",
        )?;
        let rows = st.query_map(params![since, tenant, limit], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for body in rows {
            out.push(serde_json::from_str(&body?)?);
        }
        Ok(out)
    }

    /// The latest `limit` decisions, newest first.
    pub fn recent_decisions(&self, limit: u64) -> Result<Vec<Decision>, ServiceError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut st = self
            .conn
            .prepare("SELECT body FROM decisions ORDER BY seq DESC LIMIT ?1")?;
        let rows = st.query_map([limit], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for body in rows {
            out.push(serde_json::from_str(&body?)?);
        }
        Ok(out)
    }

    /// Host agents' tokens: (host, SHA-256 digest).
    pub fn host_tokens(&self) -> Result<Vec<(String, String)>, ServiceError> {
        let mut st = self
            .conn
            .prepare("SELECT host, token_sha256 FROM host_tokens ORDER BY host")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores `host`'s token digest, replacing an earlier one.
    pub fn set_host_token(&self, host: &str, digest: &str) -> Result<(), ServiceError> {
        self.conn.execute(
            "INSERT INTO host_tokens (host, token_sha256) VALUES (?1, ?2)
             ON CONFLICT (host) DO UPDATE SET token_sha256 = excluded.token_sha256",
            params![host, digest],
        )?;
        Ok(())
    }

    /// Hosted VDCs in submission order.
    pub fn vdcs(&self) -> Result<Vec<VdcRow>, ServiceError> {
        let mut st = self
            .conn
            .prepare("SELECT name, spec, settings, snapshot FROM vdcs ORDER BY seq")?;
        let rows = st.query_map([], |r| {
            Ok(VdcRow {
                name: r.get(0)?,
                spec: r.get(1)?,
                settings: r.get(2)?,
                snapshot: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores a new VDC.
    ///
    /// # Errors
    /// The name is taken (the caller checks first) or the database refused.
    pub fn insert_vdc(&self, v: &VdcRow) -> Result<(), ServiceError> {
        self.conn.execute(
            "INSERT INTO vdcs (name, spec, settings, snapshot) VALUES (?1, ?2, ?3, ?4)",
            params![v.name, v.spec, v.settings, v.snapshot],
        )?;
        Ok(())
    }

    /// Removes VDC `name`; whether it was there.
    pub fn delete_vdc(&self, name: &str) -> Result<bool, ServiceError> {
        Ok(self
            .conn
            .execute("DELETE FROM vdcs WHERE name = ?1", [name])?
            > 0)
    }

    /// Replaces the controller snapshots of the named VDCs, in one transaction.
    pub fn set_vdc_snapshots(
        &mut self,
        snapshots: &[(String, String)],
    ) -> Result<(), ServiceError> {
        let tx = self.conn.transaction()?;
        for (name, snapshot) in snapshots {
            tx.execute(
                "UPDATE vdcs SET snapshot = ?2 WHERE name = ?1",
                params![name, snapshot],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Commits `change` in one transaction.
    ///
    /// # Errors
    /// The database refused it; nothing of it is stored then.
    pub fn commit(&mut self, change: &Change) -> Result<(), ServiceError> {
        let tx = self.conn.transaction()?;
        if let Some(h) = &change.insert_host {
            tx.execute(
                "INSERT INTO hosts (name, link_bytes_per_s, storage_rate) VALUES (?1, ?2, ?3)",
                params![h.name, h.link_bytes_per_s, h.storage_rate],
            )?;
        }
        if let Some(d) = &change.decision {
            tx.execute(
                "INSERT INTO decisions (seq, tenant, kind, admitted, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    i64::try_from(d.seq).unwrap_or(i64::MAX),
                    d.tenant,
                    serde_json::to_value(d.kind)?.as_str().unwrap_or("?"),
                    d.admitted,
                    serde_json::to_string(d)?
                ],
            )?;
        }
        if let Some(name) = &change.delete_tenant {
            tx.execute("DELETE FROM tenants WHERE name = ?1", [name])?;
        }
        if let Some(t) = &change.insert_tenant {
            tx.execute(
                "INSERT INTO tenants (seq, name, record, grant_json, token_sha256) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    i64::try_from(t.seq).unwrap_or(i64::MAX),
                    t.name,
                    t.record,
                    t.grant,
                    t.token_sha256
                ],
            )?;
        }
        for p in &change.placements {
            tx.execute(
                "INSERT INTO placements (tenant, workload) VALUES (?1, ?2)",
                params![p.tenant, p.workload],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_database_is_at_the_latest_version_and_reopens_without_migrating_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as u64);
        s.set_meta("policy", "snc-meister").unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        assert_eq!(s.meta("policy").unwrap().as_deref(), Some("snc-meister"));
        let mode: String = s
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_database_from_a_newer_tailbound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(Store::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.execute("UPDATE schema_version SET version = 99", [])
            .unwrap();
        drop(conn);
        let e = Store::open(&path).unwrap_err().to_string();
        assert!(e.contains("schema version 99"), "{e}");
    }

    #[test]
    fn a_failed_commit_stores_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("s.db")).unwrap();
        let host = HostView {
            name: "h".into(),
            link_bytes_per_s: 1e6,
            storage_rate: None,
        };
        let row = TenantRow {
            seq: 1,
            name: "t".into(),
            record: "{}".into(),
            grant: "{}".into(),
            token_sha256: "x".into(),
        };
        let change = Change {
            insert_host: Some(host.clone()),
            insert_tenant: Some(row.clone()),
            ..Change::default()
        };
        s.commit(&change).unwrap();
        // the same host again violates UNIQUE: the new tenant row must not land either
        let again = Change {
            insert_host: Some(host),
            insert_tenant: Some(TenantRow {
                seq: 2,
                name: "u".into(),
                ..row
            }),
            ..Change::default()
        };
        assert!(s.commit(&again).is_err());
        let names: Vec<String> = s.tenants().unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["t"]);
    }
}
