//! CPU pinning of the probe's threads (`sched_setaffinity(2)` on the calling thread).

use crate::error::ProbeError;

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Checks that every CPU in `cpus` may be used.
pub fn check(cpus: &[usize]) -> Result<(), ProbeError> {
    let allowed = allowed_cpus();
    match cpus.iter().find(|c| !allowed.contains(c)) {
        Some(&cpu) => Err(ProbeError::Cpu { cpu, allowed }),
        None => Ok(()),
    }
}

/// Pins the calling thread to `cpus[i % len]`; does nothing when `cpus` is empty.
pub fn pin_nth(cpus: &[usize], i: usize) {
    if cpus.is_empty() {
        return;
    }
    let cpu = cpus[i % cpus.len()];
    // SAFETY: as above; 0 = the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        tracing::warn!(cpu, error = %std::io::Error::last_os_error(), "cannot pin thread");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_cpus_pass_and_others_fail() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        assert!(check(&allowed).is_ok());
        let err = check(&[100_000]).unwrap_err().to_string();
        assert!(err.contains("100000"), "{err}");
    }
}
