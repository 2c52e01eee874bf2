//! What the enforcer remembers per host interface between runs: the configuration the
//! interface had before the first apply (what `remove` restores), the ids of the last applied
//! plan (so the next plan keeps them), and which interface that was (its index and namespace
//! inode: a namespace deleted and created again under the same name is another interface, and
//! its record is stale). Per interface, `<dir>/<host>/<interface>.json` holds the identity and
//! the original configuration, written once per first apply and synced to disk (losing it
//! would lose what `remove` restores); `<interface>.ids.json` holds the ids, rewritten when
//! they change without waiting for the disk (ids lost in a crash cost a larger diff next time,
//! never a wrong state: every apply diffs against what the kernel has). Both are written whole
//! or not at all (temporary file, rename); a lock file beside them keeps two enforcers off one
//! interface.

use crate::error::TcError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tailbound_enforce_plan::{Allocation, TcState};

const VERSION: u32 = 1;

/// Where an interface is, as the kernel tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub ifindex: u32,
    /// inode of the network namespace
    pub netns_inode: u64,
}

/// One interface's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub version: u32,
    pub host: String,
    pub interface: String,
    pub identity: Identity,
    /// the configuration before the first apply
    pub original: TcState,
    /// the ids of the last applied plan
    pub allocation: Allocation,
}

impl Record {
    pub fn new(
        host: &str,
        interface: &str,
        identity: Identity,
        original: TcState,
        allocation: Allocation,
    ) -> Record {
        Record {
            version: VERSION,
            host: host.into(),
            interface: interface.into(),
            identity,
            original,
            allocation,
        }
    }
}

/// The synced part of a record, as stored.
#[derive(Deserialize)]
struct Stored {
    version: u32,
    host: String,
    interface: String,
    identity: Identity,
    original: TcState,
}

#[derive(Serialize)]
struct StoredRef<'a> {
    version: u32,
    host: &'a str,
    interface: &'a str,
    identity: Identity,
    original: &'a TcState,
}

/// The directory of records.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn new(dir: impl Into<PathBuf>) -> Records {
        Records { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, host: &str, interface: &str) -> PathBuf {
        self.dir.join(host).join(format!("{interface}.json"))
    }

    fn ids_path(&self, host: &str, interface: &str) -> PathBuf {
        self.dir.join(host).join(format!("{interface}.ids.json"))
    }

    /// The record of an interface, if any.
    pub fn load(&self, host: &str, interface: &str) -> Result<Option<Record>, TcError> {
        let path = self.path(host, interface);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(TcError::Record {
                    what: "read",
                    path,
                    source,
                })
            }
        };
        let main: Stored = serde_json::from_str(&text).map_err(|e| TcError::BadRecord {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if main.version != VERSION || main.host != host || main.interface != interface {
            return Err(TcError::BadRecord {
                path,
                message: format!(
                    "version {} for host {:?} interface {:?}",
                    main.version, main.host, main.interface
                ),
            });
        }
        let ids_path = self.ids_path(host, interface);
        let allocation = match std::fs::read_to_string(&ids_path) {
            Ok(t) => serde_json::from_str(&t).unwrap_or_else(|e| {
                tracing::warn!(path = %ids_path.display(), error = %e, "unreadable ids; the next plan allocates afresh");
                Allocation::default()
            }),
            Err(_) => Allocation::default(),
        };
        Ok(Some(Record {
            version: main.version,
            host: main.host,
            interface: main.interface,
            identity: main.identity,
            original: main.original,
            allocation,
        }))
    }

    /// Writes what changed since `previous`: the identity and original configuration synced to
    /// disk, the ids without waiting for it.
    pub fn save(&self, rec: &Record, previous: Option<&Record>) -> Result<(), TcError> {
        let same_main =
            previous.is_some_and(|p| p.identity == rec.identity && p.original == rec.original);
        if !same_main {
            let main = StoredRef {
                version: rec.version,
                host: &rec.host,
                interface: &rec.interface,
                identity: rec.identity,
                original: &rec.original,
            };
            self.write_whole(&self.path(&rec.host, &rec.interface), &main, true)?;
        }
        if !same_main || previous.is_some_and(|p| p.allocation != rec.allocation) {
            let ids = self.ids_path(&rec.host, &rec.interface);
            self.write_whole(&ids, &rec.allocation, false)?;
        }
        Ok(())
    }

    /// Writes `value` as JSON to `path` whole: a temporary file beside it (synced when asked),
    /// renamed over it.
    fn write_whole(&self, path: &Path, value: &impl Serialize, sync: bool) -> Result<(), TcError> {
        let err = |what, source| TcError::Record {
            what,
            path: path.to_path_buf(),
            source,
        };
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(|e| err("create the directory of", e))?;
        let text =
            serde_json::to_string(value).map_err(|e| err("encode", std::io::Error::other(e)))?;
        crate::file::write_whole(path, format!("{text}\n").as_bytes(), sync)
            .map_err(|e| err("write", e))
    }

    /// Forgets an interface.
    pub fn delete(&self, host: &str, interface: &str) -> Result<(), TcError> {
        for path in [self.path(host, interface), self.ids_path(host, interface)] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(TcError::Record {
                        what: "delete",
                        path,
                        source,
                    })
                }
            }
        }
        Ok(())
    }

    /// Takes the interface's lock, waiting up to `wait` for another enforcer to finish.
    pub fn lock(&self, host: &str, interface: &str, wait: Duration) -> Result<Lock, TcError> {
        let path = self.dir.join(host).join(format!("{interface}.lock"));
        let err = |what, source| TcError::Record {
            what,
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| err("create the directory of", e))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| err("open", e))?;
        let start = Instant::now();
        loop {
            // SAFETY: a valid fd; flock has no other preconditions.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(Lock { _file: file });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(err("lock", e));
            }
            if start.elapsed() >= wait {
                return Err(TcError::Busy {
                    host: host.into(),
                    interface: interface.into(),
                    path,
                    seconds: wait.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Held while an interface is being changed; released when dropped (the kernel releases a
/// flock when its file closes, also when the process dies).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_stay_whole() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path());
        assert_eq!(r.load("h", "eth0").unwrap(), None);
        let rec = Record::new(
            "h",
            "eth0",
            Identity {
                ifindex: 3,
                netns_inode: 9,
            },
            TcState::default(),
            Allocation::default(),
        );
        r.save(&rec, None).unwrap();
        assert_eq!(r.load("h", "eth0").unwrap(), Some(rec.clone()));
        // nothing but the record and its ids is left in its directory
        let mut names: Vec<_> = std::fs::read_dir(dir.path().join("h"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["eth0.ids.json", "eth0.json"]);
        // lost or broken ids only mean a fresh allocation
        std::fs::write(dir.path().join("h/eth0.ids.json"), "{broken").unwrap();
        assert_eq!(r.load("h", "eth0").unwrap(), Some(rec));
        std::fs::write(r.path("h", "eth0"), "{broken").unwrap();
        let e = r.load("h", "eth0").unwrap_err().to_string();
        assert!(e.contains("eth0.json") && e.contains("delete it"), "{e}");
        r.delete("h", "eth0").unwrap();
        assert_eq!(r.load("h", "eth0").unwrap(), None);
    }

    #[test]
    fn a_held_lock_makes_the_second_enforcer_wait_then_give_up() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::new(dir.path());
        let held = r.lock("h", "eth0", Duration::ZERO).unwrap();
        let e = r.lock("h", "eth0", Duration::ZERO).unwrap_err();
        assert!(matches!(e, TcError::Busy { .. }), "{e}");
        drop(held);
        assert!(r.lock("h", "eth0", Duration::ZERO).is_ok());
    }
}
