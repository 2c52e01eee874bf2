//! Files written whole or not at all by long-running processes (the tc enforcer's records, a
//! host agent's state): a temporary file beside the destination, written, optionally synced,
//! then renamed over it; removed again on an error. No signal handling of its own (the CLI's
//! `output` module has that for one-shot commands): the callers finish a change before they stop.

use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes` atomically (rename); `sync` flushes the data to the device
/// before the rename. The folder must exist.
pub fn write_whole(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
