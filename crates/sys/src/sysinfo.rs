//! Facts about the machine and the process that only a libc call or a CPU instruction can
//! give: `uname`, the coarse clock's resolution (one jiffy), the glibc version, the hypervisor
//! CPUID leaf and the user ids. (Nice value and affinity are in [`crate::os`].)
//!
//! Everything that can be read from `/proc` or `/sys` is read in `env.rs` instead, without
//! `unsafe`. Every function here returns `None` rather than guessing when the call fails.

use std::ffi::CStr;

/// The fields of `uname(2)` the environment records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uname {
    /// Kernel release, e.g. `6.18.44`.
    pub release: String,
    /// Kernel build string, e.g. `#1 SMP PREEMPT_DYNAMIC ...`.
    pub version: String,
    /// Hardware name, e.g. `x86_64`.
    pub machine: String,
}

fn field_to_string(field: &[libc::c_char]) -> String {
    // The kernel NUL-terminates every utsname field; stop at the first NUL, or at the end of
    // the array should a libc ever fill it completely.
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `uname(2)`, or `None` if it fails.
pub fn uname() -> Option<Uname> {
    // SAFETY: utsname is plain old data (arrays of c_char); all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname that lives for the duration of the call.
    let rc = unsafe { libc::uname(&mut u) };
    if rc != 0 {
        return None;
    }
    Some(Uname {
        release: field_to_string(&u.release),
        version: field_to_string(&u.version),
        machine: field_to_string(&u.machine),
    })
}

/// Resolution of `CLOCK_MONOTONIC_COARSE` in nanoseconds.
///
/// The coarse clocks advance once per timer tick, so this is the kernel's `TICK_NSEC`, i.e.
/// one jiffy: the only unprivileged, exact way to learn `CONFIG_HZ` at run time.
/// (`sysconf(_SC_CLK_TCK)` is USER_HZ, not HZ.)
pub fn coarse_clock_resolution_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an unknown clock id only makes the call fail.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc != 0 || ts.tv_sec < 0 || ts.tv_nsec < 0 {
        return None;
    }
    let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    (ns > 0).then_some(ns)
}

/// USER_HZ, the unit of the tick counts in `/proc/stat` and `/proc/<pid>/stat`.
pub fn user_hz() -> Option<u64> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (v > 0).then_some(v as u64)
}

/// The glibc version the process runs with (not the one it was built against), or `None`
/// when the C library is not glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn glibc_version() -> Option<String> {
    // SAFETY: gnu_get_libc_version takes no arguments and returns a pointer to a static,
    // NUL-terminated string owned by glibc.
    let p = unsafe { libc::gnu_get_libc_version() };
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is non-null and points to a static NUL-terminated string (see above).
    let s = unsafe { CStr::from_ptr(p) };
    Some(s.to_string_lossy().into_owned())
}

/// The glibc version the process runs with, or `None` when the C library is not glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn glibc_version() -> Option<String> {
    let _ = CStr::from_bytes_with_nul(b"\0");
    None
}

/// The hypervisor's CPUID signature (leaf `0x4000_0000`, e.g. `KVMKVMKVM`,
/// `Microsoft Hv`, `VMwareVMware`), read only when CPUID.1:ECX bit 31 says a hypervisor is
/// present: on bare metal that leaf returns unrelated data.
#[cfg(target_arch = "x86_64")]
pub fn cpuid_hypervisor_vendor() -> Option<String> {
    use core::arch::x86_64::__cpuid;
    // Newer toolchains made `__cpuid` safe; older ones (the crate's MSRV) need `unsafe`.
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86-64 CPU and only writes registers.
    let leaf1 = unsafe { __cpuid(1) };
    if leaf1.ecx & (1 << 31) == 0 {
        return None;
    }
    #[allow(unused_unsafe)]
    // SAFETY: as above; leaf 0x4000_0000 is defined whenever the hypervisor bit is set.
    let hv = unsafe { __cpuid(0x4000_0000) };
    let mut bytes = Vec::with_capacity(12);
    for reg in [hv.ebx, hv.ecx, hv.edx] {
        bytes.extend_from_slice(&reg.to_le_bytes());
    }
    let text: String = String::from_utf8_lossy(&bytes)
        .trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_owned();
    (!text.is_empty()).then_some(text)
}

/// The hypervisor's CPUID signature; there is no such leaf outside x86-64.
#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid_hypervisor_vendor() -> Option<String> {
    None
}

/// Real and effective user id of the process.
pub fn uids() -> (u32, u32) {
    // SAFETY: getuid and geteuid cannot fail and have no preconditions.
    unsafe { (libc::getuid(), libc::geteuid()) }
}

/// The size of a page, bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf takes a plain integer.
    let r = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if r > 0 {
        r as usize
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uname_and_resolution() {
        let u = uname().expect("uname");
        assert!(!u.release.is_empty());
        assert!(!u.machine.is_empty());
        let res = coarse_clock_resolution_ns().expect("coarse clock");
        // Between HZ=1000 (1 ms) and HZ=24 (~41.7 ms) on any real kernel.
        assert!((1_000_000..=50_000_000).contains(&res), "{res}");
        assert!(user_hz().is_some());
    }

    #[test]
    fn process_facts() {
        let (uid, euid) = uids();
        let _ = (uid, euid);
        #[cfg(target_env = "gnu")]
        assert!(glibc_version().unwrap().starts_with('2'));
        if let Some(v) = cpuid_hypervisor_vendor() {
            assert!(!v.contains('\0'));
        }
    }
}
