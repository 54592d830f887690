/*
 * The helper program that `oscost spawn` (and benches/spawn_ref.c) starts with posix_spawn
 * and fork + execve: its whole code is one exit_group(0) system call. Built static and
 * without the C library (cc -static -nostdlib), so starting it costs what the kernel's
 * execve costs and nothing else: no dynamic loader, no library start-up.
 */
void _start(void) {
#if defined(__x86_64__)
    __asm__ volatile("mov $231, %%eax\n\txor %%edi, %%edi\n\tsyscall"
                     :
                     :
                     : "rax", "rdi", "rcx", "r11", "memory");
#elif defined(__aarch64__)
    __asm__ volatile("mov x8, #94\n\tmov x0, #0\n\tsvc #0" : : : "x0", "x8", "memory");
#else
#error "exit_group is written for x86_64 and aarch64 only"
#endif
    for (;;) {
    }
}
