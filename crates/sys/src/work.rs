//! The fixed unit of computation that `split` divides: one function, written in assembly on
//! x86-64 and aarch64 so that its code, and where that code sits, is the same in every form
//! and every build. A compiled loop's speed can change with its alignment (a loop that
//! straddles a 32-byte boundary decodes differently), which once made one form of a split
//! look 50 % slower than another for no reason of the operating system's.
//!
//! One unit is one iteration of a dependent add loop: about one core cycle, touching no
//! memory, so the work neither depends on caches nor disturbs them.

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.oscost_work,\"ax\",@progbits",
    ".globl oscost_work_units",
    ".p2align 6",
    "oscost_work_units:",
    "    xor eax, eax",
    "    test rdi, rdi",
    "    je 2f",
    ".p2align 4",
    "1:",
    "    add rax, 1",
    "    sub rdi, 1",
    "    jne 1b",
    "2:",
    "    ret",
    ".popsection",
);

#[cfg(target_arch = "aarch64")]
std::arch::global_asm!(
    ".pushsection .text.oscost_work,\"ax\",%progbits",
    ".globl oscost_work_units",
    ".p2align 6",
    "oscost_work_units:",
    "    mov x1, x0",
    "    mov x0, #0",
    "    cbz x1, 2f",
    ".p2align 4",
    "1:",
    "    add x0, x0, #1",
    "    subs x1, x1, #1",
    "    b.ne 1b",
    "2:",
    "    ret",
    ".popsection",
);

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
extern "C" {
    fn oscost_work_units(units: u64) -> u64;
}

/// Does `units` units of work and returns how many were done (always `units`: the count is
/// carried through the loop, so a caller that sums the results proves the work was done).
/// Raw computation only: safe in a forked child.
#[inline]
pub fn work(units: u64) -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        // SAFETY: the function above reads one integer register, writes two, touches no
        // memory and follows the C calling convention.
        unsafe { oscost_work_units(units) }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        portable_work(units)
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(never)]
fn portable_work(units: u64) -> u64 {
    let mut done = 0u64;
    for _ in 0..units {
        done = std::hint::black_box(done + 1);
    }
    done
}

/// Whether the work loop's placement is fixed (assembly aligned to 64 bytes) rather than
/// left to the compiler, and its address, for the result.
pub fn placement() -> (bool, usize) {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        (
            true,
            oscost_work_units as unsafe extern "C" fn(u64) -> u64 as usize,
        )
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        (false, portable_work as fn(u64) -> u64 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_returns_its_units_and_is_aligned() {
        for n in [0, 1, 2, 7, 1000, 123_457] {
            assert_eq!(work(n), n);
        }
        let (fixed, addr) = placement();
        if fixed {
            assert_eq!(addr % 64, 0, "work loop at {addr:#x}");
        }
    }
}
