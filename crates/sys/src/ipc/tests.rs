use super::link::{CondShared, Kind, MQ_SERIAL};
use super::*;
use std::ffi::CString;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Barrier;
use std::time::{Duration, Instant};

const ROUND_TRIPS: usize = 1000;

/// Links that cannot be made here (mqueue without the fs, say) are skipped with a note,
/// never silently: the message says why.
fn link(via: Via) -> Option<Link> {
    match Link::new(via) {
        Ok(l) => Some(l),
        // Only a kernel built without POSIX message queues excuses a missing one.
        Err(e) if via == Via::Mqueue && e.kind() == io::ErrorKind::Unsupported => {
            eprintln!("skipping {via}: {e}");
            None
        }
        Err(e) => panic!("{via}: {e}"),
    }
}

#[test]
fn names_match_serde() {
    for v in &Via::ALL {
        assert_eq!(Via::from_name(v.name()), Some(*v));
        assert_eq!(
            serde_json::to_string(v).unwrap(),
            format!("\"{}\"", v.name())
        );
        assert!(!v.describe().is_empty());
        assert_eq!(v.is_link(), Via::LINKS.contains(v));
    }
    assert_eq!(Via::LINKS.len() + 1, Via::ALL.len());
}

#[test]
fn yield_is_not_a_link() {
    let e = Link::new(Via::Yield).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
}

#[test]
fn post_then_wait_in_one_thread() {
    for via in Via::LINKS {
        let Some(l) = link(via) else { continue };
        let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
        l.set_waiter(crate::gettid());
        for _ in 0..3 {
            l.post().unwrap_or_else(|e| panic!("{via} post: {e}"));
        }
        for _ in 0..3 {
            l.wait().unwrap_or_else(|e| panic!("{via} wait: {e}"));
        }
    }
}

#[test]
fn signal_post_without_waiter_is_an_error() {
    let l = Link::new(Via::Signal).unwrap();
    assert_eq!(l.post().unwrap_err().kind(), io::ErrorKind::NotConnected);
}

#[test]
fn two_thread_ping_pong() {
    for via in Via::LINKS {
        let (Some(to_b), Some(to_a)) = (link(via), link(via)) else {
            continue;
        };
        let ready = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
                to_b.set_waiter(crate::gettid());
                ready.wait();
                for _ in 0..ROUND_TRIPS {
                    to_b.wait().unwrap();
                    to_a.post().unwrap();
                }
            });
            let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
            to_a.set_waiter(crate::gettid());
            ready.wait();
            for _ in 0..ROUND_TRIPS {
                to_b.post().unwrap_or_else(|e| panic!("{via}: {e}"));
                to_a.wait().unwrap_or_else(|e| panic!("{via}: {e}"));
            }
        });
    }
}

/// Ping-pong with a forked child. The child does nothing but raw link calls and `_exit`
/// (the test binary is multithreaded). A watchdog kills the child and wakes the parent
/// if the exchange stalls, so a broken link fails the test instead of hanging it.
fn fork_ping_pong(via: Via) {
    let (Some(to_child), Some(to_parent)) = (link(via), link(via)) else {
        return;
    };
    // The child inherits this thread's mask, so blocking here covers both sides.
    let _block = (via == Via::Signal).then(|| block_link_signal_scoped().unwrap());
    to_parent.set_waiter(crate::gettid());
    // SAFETY: the child only calls async-signal-safe link operations and _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        to_child.set_waiter(crate::gettid());
        // A first token tells the parent the child is ready (and, for signals, named).
        let mut ok = to_parent.post().is_ok();
        for _ in 0..ROUND_TRIPS {
            ok = ok && to_child.wait().is_ok() && to_parent.post().is_ok();
        }
        // SAFETY: _exit runs no destructors or atexit handlers, fine in a forked child.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let done = AtomicBool::new(false);
    let status = std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            while !done.load(Ordering::Acquire) {
                if start.elapsed() > Duration::from_secs(30) {
                    // SAFETY: pid is our unreaped child, so the id cannot be reused.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    let _ = to_parent.post();
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        to_parent.wait().unwrap();
        for _ in 0..ROUND_TRIPS {
            to_child.post().unwrap();
            to_parent.wait().unwrap();
        }
        done.store(true, Ordering::Release);
        let mut status = 0;
        // SAFETY: status is writable; pid is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid, "waitpid: {}", io::Error::last_os_error());
        status
    });
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{via}: child status {status:#x}"
    );
}

#[test]
fn fork_ping_pong_pipe() {
    fork_ping_pong(Via::Pipe);
}

#[test]
fn fork_ping_pong_futex() {
    fork_ping_pong(Via::Futex);
}

#[test]
fn fork_ping_pong_posix_sem() {
    fork_ping_pong(Via::PosixSem);
}

#[test]
fn fork_ping_pong_other_links() {
    for via in Via::LINKS {
        if ![Via::Pipe, Via::Futex, Via::PosixSem].contains(&via) {
            fork_ping_pong(via);
        }
    }
}

#[test]
fn shared_words_are_visible_across_fork() {
    let w = SharedWords::new(3).unwrap();
    assert_eq!(w.len(), 3);
    w.get(2).store(7, Ordering::SeqCst);
    // SAFETY: the child only does atomic stores and _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        w.get(0)
            .store(w.get(2).load(Ordering::SeqCst) + 35, Ordering::SeqCst);
        w.get32(1).store(99, Ordering::SeqCst);
        // SAFETY: see above.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: status is writable; pid is our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert_eq!(w.get(0).load(Ordering::SeqCst), 42);
    assert_eq!(w.get32(1).load(Ordering::SeqCst), 99);
    // The two arrays do not alias.
    assert_eq!(w.get(1).load(Ordering::SeqCst), 0);
    assert_eq!(w.get32(0).load(Ordering::SeqCst), 0);
}

#[test]
fn futex_helpers() {
    let w = SharedWords::new(1).unwrap();
    let word = w.get32(0);
    // Value differs from expected: returns at once.
    word.store(1, Ordering::SeqCst);
    futex_wait(word, 0).unwrap();
    assert_eq!(futex_wake(word, 1).unwrap(), 0);
}

#[test]
fn a_killed_owner_does_not_wedge_a_condvar_link() {
    let l = Link::new(Via::Condvar).unwrap();
    let Kind::Condvar(map) = &l.kind else {
        unreachable!()
    };
    let p = map.at::<CondShared>();
    // SAFETY: the child only locks the shared mutex and _exits holding it.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: p is the link's initialised CondShared, inherited across fork.
        unsafe {
            libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*p).mutex));
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: status is writable; pid is our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    l.post().unwrap();
    l.wait().unwrap();
}

#[test]
fn idle_poll_holds_or_says_why() {
    match IdlePoll::hold() {
        Ok(hold) => drop(hold),
        Err(e) => assert!(e.to_string().contains("/dev/cpu_dma_latency"), "{e}"),
    }
}

#[test]
fn pthread_mutex_locks_and_unlocks() {
    let m = std::sync::Arc::new(PthreadMutex::new());
    let (done, finished) = std::sync::mpsc::channel();
    let pairs = std::sync::Arc::clone(&m);
    // On a thread of its own, so that a pair that left the mutex locked fails the test
    // (the next lock would wait for ever) instead of hanging it.
    std::thread::spawn(move || {
        for _ in 0..10 {
            pairs.lock_unlock().unwrap();
        }
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("ten lock/unlock pairs did not finish: a pair left the mutex locked");
    let other = std::sync::Arc::clone(&m);
    let taken = std::thread::spawn(move || {
        // SAFETY: an initialised mutex, alive while `other` holds it.
        let r = unsafe { libc::pthread_mutex_trylock(other.m.0.get()) };
        if r == 0 {
            // SAFETY: this thread took it just above.
            unsafe { libc::pthread_mutex_unlock(other.m.0.get()) };
        }
        r
    })
    .join()
    .unwrap();
    assert_eq!(
        taken, 0,
        "another thread could not take the mutex: it was left locked"
    );
}

#[test]
fn scoped_block_restores_the_mask_and_drains() {
    {
        let _b = block_link_signal_scoped().unwrap();
        let l = Link::new(Via::Signal).unwrap();
        l.set_waiter(crate::gettid());
        l.post().unwrap();
        // Left pending on purpose: the guard must take it before unblocking.
    }
    let b = block_link_signal_scoped().unwrap();
    assert!(!b.was_blocked);
    assert_eq!(drain_link_signal(), 0);
}

#[test]
fn remove_sysv_sem_removes_once_and_ignores_gone_ids() {
    // SAFETY: no pointers involved.
    let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
    assert!(id >= 0, "semget: {}", io::Error::last_os_error());
    assert!(remove_sysv_sem(id).unwrap());
    assert!(!remove_sysv_sem(id).unwrap());
    assert!(!remove_sysv_sem(-1).unwrap());
}

#[test]
fn mqueue_names_do_not_linger() {
    let serial = MQ_SERIAL.load(Ordering::Relaxed);
    if let Some(l) = link(Via::Mqueue) {
        // The queue works while its name is already gone.
        l.post().unwrap();
        l.wait().unwrap();
        let name = CString::new(format!("/oscost-{}-{serial}", std::process::id())).unwrap();
        // SAFETY: name is NUL-terminated; without O_CREAT no further arguments are read.
        let mqd = unsafe { libc::mq_open(name.as_ptr(), libc::O_RDONLY) };
        let err = io::Error::last_os_error();
        assert_eq!(mqd, -1, "the queue's name outlived its creation");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }
}
