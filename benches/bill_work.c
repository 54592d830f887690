/* bill_work: programs whose OS operations are known exactly, to check the counts of
 * `oscost bill -- bill_work MODE N` against.
 *
 * Build: cc -O2 -pthread -o bill_work benches/bill_work.c
 * Usage: bill_work MODE N     (MODE getppid, anon-write, anon-read, cow, file-read, pipe,
 *                              threads, forkexec, fork-later; N a positive integer)
 *        bill_work mixed | noop
 * Prints nothing on success (so a bill has no write of our own to explain) and exits 0; bad
 * arguments: one line on stderr, exit 2; a failing call: one line on stderr, exit 1.
 *
 * What a bill must show, over and above "the loader": what every run of this dynamically linked
 * program makes before main and at exit, which is `bill_work noop`'s bill. With glibc 2.36 on
 * x86_64 that is execve 1, brk 1, mmap 8, mprotect 3, munmap 1, openat 2, close 2, read 1,
 * pread64 2, newfstatat 2, access 1, arch_prctl 1, set_tid_address 1, set_robust_list 1,
 * rseq 1, prlimit64 1, exit_group 1, and 50 to 60 page faults (measured 51..56). Counts are of
 * syscalls entered, every process of the run together; "+k" is k more than the loader's.
 * Faults are minor faults, user mode. A count taken at every fault's entry (the
 * exceptions:page_fault_user tracepoint) can read one or two more than the figure here: seen
 * in mixed, 200 001 and 200 002 faults at the 4-page loop's store for its 200 000 pages.
 *
 *   getppid N     getppid N exactly; nothing else.
 *   anon-write N  prctl 1 (PR_SET_THP_DISABLE), mmap +1, munmap +1; N write faults on fresh
 *                 anonymous pages, each a first touch that allocates and zeroes a page.
 *   anon-read N   as anon-write, but the N faults are read faults that map the shared zero
 *                 page (no allocation).
 *   cow N         prctl 1, mmap +1, munmap +1, clone 1 (a fork: flags SIGCHLD only), wait4 1,
 *                 exit_group +1 (the child's); parent: N first-touch write faults; child: N
 *                 copy-on-write faults on the mapping (write faults on present read-only
 *                 pages), and about a dozen of its own besides (measured 13): fork does not
 *                 copy the page tables of file mappings without private pages, so the child
 *                 faults its code back in, and its stack and GOT pages are copied on write.
 *   file-read N   prctl 1, access 1, openat +1, unlink 1, pwrite64 N (one page each), mmap +1,
 *                 munmap +1, close +1; N read faults on a shared read-only file mapping whose
 *                 pages are all in the page cache (minor, none major; none maps a neighbour,
 *                 see do_file_read), and 1 more filling the write buffer. The file is in
 *                 /dev/shm (tmpfs), else $TMPDIR, else /tmp, and is removed. N exactly assumes
 *                 fault_around_bytes at most 64 KiB (its default) and small folios in that file
 *                 system (tmpfs without huge=, the default): a large folio of tmpfs is mapped
 *                 whole by one fault.
 *   pipe N        pipe2 2, clone 1, wait4 1, close +4, exit_group +1 (the child's); read 2N
 *                 and write 2N on the pipes (parent N each, child N each): read +2N, write 2N.
 *   threads N     clone3 N exactly, exit N (one per thread); per thread also rt_sigprocmask 4,
 *                 rseq 1, set_robust_list 1, madvise 1 (glibc drops the dead thread's stack),
 *                 and futex 0 or 1 (the join's wait, 1 only when the thread has not yet exited
 *                 when join is called: a race; under strace always 1). The first
 *                 pthread_create also maps the stack (mmap +1, mprotect +1), which glibc reuses
 *                 after, and sets up (rt_sigaction 1, rt_sigprocmask 1, getrandom 1, brk +2).
 *   forkexec N    readlink 1, clone N (flags SIGCHLD only), wait4 N, and N children each
 *                 making the loader's calls, execve and exit_group included (each child is
 *                 `bill_work noop`): execve N + 1 in all.
 *   fork-later N  clone 2 at once: an early child, which forks an early grandchild, both
 *                 running before `oscost bill --pid` attaches. Then each of the three reads
 *                 one byte from stdin (the moment billing has begun: write three), and: the
 *                 early grandchild makes N getppid; the early child makes N and reaps it; the
 *                 process makes clone 2, wait4 3 (a child started now makes N and forks a
 *                 grandchild that makes N; the process makes N after reaping the child, then
 *                 reaps the early child). Once billing began: clone 2, wait4 4, exit_group +4
 *                 and getppid 5N (the reads were entered before). The children make nothing
 *                 else (no loader: they run on).
 *   mixed         prctl 1, openat +1, mmap +50 001, munmap +50 000, close +1, read +2000 (1 MiB
 *                 each from /dev/zero, which never returns short; one every 25 mappings);
 *                 200 000 first-touch write faults on the four-page mappings (4 each) and 256
 *                 on the read buffer, touched before the loop so the reads themselves do not
 *                 fault.
 *   noop          nothing but the loader's calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *prog = "bill_work";

static void bad_args(const char *why) {
    fprintf(stderr, "%s: %s (usage: %s getppid|anon-write|anon-read|cow|file-read|pipe|threads|"
                    "forkexec N, or %s mixed|noop)\n",
            prog, why, prog, prog);
    exit(2);
}

static void fail(const char *what) {
    fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
    exit(1);
}

static unsigned long parse_n(const char *s) {
    /* strtoul takes "-1" as ULONG_MAX and skips leading space: only plain digits count. */
    if (*s < '0' || *s > '9') bad_args("N must be a positive integer");
    char *end;
    errno = 0;
    unsigned long n = strtoul(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || n == 0) bad_args("N must be a positive integer");
    return n;
}

/* A fork as the bare syscall: glibc's fork() also runs the atfork handlers and has the child
 * call set_robust_list, one call per child a bill would have to be told about. The children here
 * only touch memory, read, write, execve and _exit, which need none of what fork() resets. The
 * argument order of clone differs between architectures, but with all but the flags zero it
 * does not matter. */
static pid_t spawn(void) {
    long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
    if (pid < 0) fail("clone");
    return (pid_t)pid;
}

static void reap(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) fail("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s: child %d failed (wait status %#x)\n", prog, (int)pid, st);
        exit(1);
    }
}

/* Transparent huge pages (and mTHP sizes) would let one fault map many pages, so the fault
 * counts would depend on the machine's THP settings. One prctl covers every mapping made
 * later, children included, where a madvise(MADV_NOHUGEPAGE) would be needed per mapping. */
static void no_thp(void) {
    if (prctl(PR_SET_THP_DISABLE, 1UL, 0UL, 0UL, 0UL)) fail("prctl(PR_SET_THP_DISABLE)");
}

static size_t page;

static char *map_anon(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("mmap");
    return p;
}

/* Volatile, so each page's access happens, once, in this order, and is not merged away. */
static void write_pages(char *p, unsigned long n, char v) {
    volatile char *q = p;
    for (unsigned long i = 0; i < n; i++) q[i * page] = v;
}

static unsigned read_pages(const char *p, unsigned long n) {
    const volatile char *q = p;
    unsigned sum = 0;
    for (unsigned long i = 0; i < n; i++) sum += (unsigned char)q[i * page];
    return sum;
}

static volatile unsigned sink;

static void do_getppid(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) syscall(SYS_getppid);
}

static void do_anon(unsigned long n, int write) {
    no_thp();
    char *p = map_anon(n * page);
    if (write)
        write_pages(p, n, 1);
    else
        sink = read_pages(p, n);
    if (munmap(p, n * page)) fail("munmap");
}

static void do_cow(unsigned long n) {
    no_thp();
    char *p = map_anon(n * page);
    write_pages(p, n, 1);
    pid_t pid = spawn();
    if (pid == 0) {
        write_pages(p, n, 2);
        _exit(0);
    }
    reap(pid);
    if (munmap(p, n * page)) fail("munmap");
}

/* A read fault on a cached file page also maps the cached pages around it in the same 64 KiB
 * (fault-around, fault_around_bytes' default), so reading N adjacent pages takes about N / 16
 * faults. MADV_RANDOM does not stop that (it turns off readahead, not fault-around: measured on
 * 6.18, N = 1000 adjacent pages took 63 faults with it and 64 without). So the file holds its N
 * pages 64 KiB apart with holes between: a hole has no page to map around, and each read of a
 * data page takes its own fault. */
static void do_file_read(unsigned long n) {
    no_thp();
    static _Alignas(65536) char data[65536];
    if (page > sizeof data) bad_args("pages larger than 64 KiB are not supported");
    size_t stride = sizeof data / page;
    if (n > SIZE_MAX / 2 / (stride * page)) bad_args("N pages do not fit in the address space");
    const char *dir = "/dev/shm";
    if (access(dir, W_OK)) {
        dir = getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
    }
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/bill_work.XXXXXX", dir) >= (int)sizeof path)
        bad_args("TMPDIR too long");
    int fd = mkstemp(path);
    if (fd < 0) fail("mkstemp");
    /* Unlinked at once, so a killed run leaves nothing behind; the descriptor keeps it. */
    if (unlink(path)) fail("unlink");
    memset(data, 'b', page);
    for (unsigned long i = 0; i < n; i++)
        if (pwrite(fd, data, page, (off_t)(i * stride * page)) != (ssize_t)page) fail("pwrite");
    size_t len = n * stride * page;
    char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) fail("mmap");
    const volatile char *q = p;
    unsigned sum = 0;
    for (unsigned long i = 0; i < n; i++) sum += (unsigned char)q[i * stride * page];
    sink = sum;
    if (munmap(p, len)) fail("munmap");
    close(fd);
}

static void do_pipe(unsigned long n) {
    int to_child[2], to_parent[2];
    if (pipe2(to_child, O_CLOEXEC) || pipe2(to_parent, O_CLOEXEC)) fail("pipe2");
    pid_t pid = spawn();
    char b = 'x';
    if (pid == 0) {
        close(to_child[1]);
        close(to_parent[0]);
        for (unsigned long i = 0; i < n; i++) {
            /* _exit, not fail(): stdio in a child of a raw clone is best left alone. */
            if (read(to_child[0], &b, 1) != 1) _exit(1);
            if (write(to_parent[1], &b, 1) != 1) _exit(1);
        }
        _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    for (unsigned long i = 0; i < n; i++) {
        if (write(to_child[1], &b, 1) != 1) fail("write");
        if (read(to_parent[0], &b, 1) != 1) fail("read");
    }
    reap(pid);
}

static void *nothing(void *arg) {
    return arg;
}

static void do_threads(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) {
        pthread_t t;
        int e = pthread_create(&t, NULL, nothing, NULL);
        if (e) {
            errno = e;
            fail("pthread_create");
        }
        e = pthread_join(t, NULL);
        if (e) {
            errno = e;
            fail("pthread_join");
        }
    }
}

extern char **environ;

/* Ourselves in noop mode rather than /bin/true: every child then makes only the loader's calls,
 * the same as `bill_work noop` shows, where /bin/true also sets up its locale. */
static void do_forkexec(unsigned long n) {
    static char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) fail("readlink /proc/self/exe");
    self[len] = '\0';
    char *argv[] = {self, "noop", NULL};
    for (unsigned long i = 0; i < n; i++) {
        pid_t pid = spawn();
        if (pid == 0) {
            execve(self, argv, environ);
            _exit(127);
        }
        reap(pid);
    }
}

static void do_mixed(void) {
    enum { MAPS = 50000, READS = 2000, BUF = 1 << 20, PAGES = 4 };
    no_thp();
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open /dev/zero");
    char *buf = map_anon(BUF);
    /* Touched now, so the reads copy into present pages and the faults are all the loop's. */
    write_pages(buf, BUF / page, 1);
    for (int i = 0; i < MAPS; i++) {
        /* A read every MAPS / READS mappings: the two kinds interleave, as in a real program. */
        if (i % (MAPS / READS) == 0) {
            for (size_t got = 0; got < BUF;) {
                ssize_t r = read(fd, buf + got, BUF - got);
                if (r <= 0) fail("read /dev/zero");
                got += (size_t)r;
            }
        }
        char *p = map_anon(PAGES * page);
        write_pages(p, PAGES, 1);
        if (munmap(p, PAGES * page)) fail("munmap");
    }
    close(fd);
}

/* Children running before a bill attaches to this process, and children made once it has,
 * each with known calls. Raw system calls and _exit only: no stdio buffer is flushed twice. */
static void do_fork_later(unsigned long n) {
    char byte;
    pid_t early = spawn();
    if (early == 0) {
        pid_t early_grandchild = spawn();
        if (read(0, &byte, 1) != 1) fail("read the go-ahead from stdin");
        do_getppid(n);
        if (early_grandchild == 0) _exit(0);
        reap(early_grandchild);
        _exit(0);
    }
    if (read(0, &byte, 1) != 1) fail("read the go-ahead from stdin");
    pid_t child = spawn();
    if (child == 0) {
        do_getppid(n);
        pid_t grandchild = spawn();
        if (grandchild == 0) {
            do_getppid(n);
            _exit(0);
        }
        reap(grandchild);
        _exit(0);
    }
    reap(child);
    do_getppid(n);
    reap(early);
}

static void do_noop(unsigned long n) {
    (void)n;
}

static void run_mixed(unsigned long n) {
    (void)n;
    do_mixed();
}

static void anon_write(unsigned long n) {
    do_anon(n, 1);
}

static void anon_read(unsigned long n) {
    do_anon(n, 0);
}

static const struct {
    const char *name;
    void (*run)(unsigned long n);
    int takes_n, pages; /* pages: N counts pages, so N * page must fit in a size_t */
} modes[] = {
    {"getppid", do_getppid, 1, 0},   {"anon-write", anon_write, 1, 1},
    {"anon-read", anon_read, 1, 1},  {"cow", do_cow, 1, 1},
    {"file-read", do_file_read, 1, 0}, {"pipe", do_pipe, 1, 0},
    {"threads", do_threads, 1, 0},   {"forkexec", do_forkexec, 1, 0},
    {"fork-later", do_fork_later, 1, 0},
    {"mixed", run_mixed, 0, 0},      {"noop", do_noop, 0, 0},
};

int main(int argc, char **argv) {
    if (argc > 0 && argv[0][0]) {
        const char *slash = strrchr(argv[0], '/');
        prog = slash ? slash + 1 : argv[0];
    }
    if (argc < 2) bad_args("no mode given");
    size_t m = 0, count = sizeof modes / sizeof modes[0];
    while (m < count && strcmp(argv[1], modes[m].name)) m++;
    if (m == count) bad_args("unknown mode");
    unsigned long n = 0;
    if (modes[m].takes_n) {
        if (argc != 3) bad_args("mode needs one N");
        n = parse_n(argv[2]);
    } else if (argc != 2) {
        bad_args("mode takes no N");
    }
    /* From the auxiliary vector: no syscall. */
    page = (size_t)sysconf(_SC_PAGESIZE);
    if (modes[m].pages && n > SIZE_MAX / page) bad_args("N pages do not fit in the address space");
    modes[m].run(n);
    return 0;
}
