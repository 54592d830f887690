//! The BPF tracer's tests: its programs assembled, and records laid out, on known input.

use super::names::irq_names;
use super::*;
use crate::skip::skip;

#[test]
fn a_refusal_for_want_of_descriptors_names_the_limit() {
    let why = refused(
        "loading a program",
        &io::Error::from_raw_os_error(libc::EMFILE),
    )
    .0;
    assert!(
        why.contains("for want of file descriptors") && why.contains("ulimit -n"),
        "{why}"
    );
    let why = refused(
        "loading a program",
        &io::Error::from_raw_os_error(libc::EINVAL),
    )
    .0;
    assert!(!why.contains("ulimit"), "{why}");
}

#[test]
fn instructions_encode_as_the_kernel_lays_them_out() {
    // r1 = 1 (BPF_ALU64 | BPF_MOV | BPF_K): code 0xb7, dst 1, imm 1.
    assert_eq!(Insn::new(ALU64 | MOV, 1, 0, 0, 1).0, 0x0000_0001_0000_01b7);
    // *(u32 *)(r10 - 4) = r0: code 0x63, dst 10, src 0, off -4.
    assert_eq!(
        Insn::new(STX | MEM | W, 10, 0, -4, 0).0,
        0x0000_0000_fffc_0a63
    );
    // lock *(u64 *)(r7 + 0) fetch-add r1: code 0xdb, imm BPF_ADD | BPF_FETCH.
    assert_eq!(
        Insn::new(STX | ATOMIC | DW, 7, 1, 0, FETCH).0,
        0x0000_0001_0000_17db
    );
}

#[test]
fn every_jump_lands_inside_the_program_and_it_ends_in_exit() {
    let all = [
        ("raw_syscalls", "sys_enter"),
        ("raw_syscalls", "sys_exit"),
        ("sched", "sched_waking"),
        ("sched", "sched_switch"),
        ("irq_vectors", "local_timer_entry"),
        ("irq", "irq_handler_exit"),
        ("irq", "softirq_entry"),
        ("timer", "hrtimer_expire_entry"),
        ("signal", "signal_deliver"),
    ];
    for (k, (sys, ev)) in all.into_iter().enumerate() {
        let s = spec(sys, ev).unwrap();
        let p = assemble(&s, k as u16, 3);
        assert_eq!(p.last().unwrap().code(), JMP | EXIT);
        for (i, insn) in p.iter().enumerate() {
            let c = insn.code();
            if c & 0x07 == JMP && c & 0xf0 != CALL && c & 0xf0 != EXIT {
                let off = (insn.0 >> 16) as u16 as i16 as i64;
                let to = i as i64 + 1 + off;
                assert!(to > i as i64 && (to as usize) < p.len(), "{ev}: {i}");
            }
        }
    }
}

fn format(sys: &str, text: &str) -> Format {
    crate::ktrace::parse_format(sys, text).unwrap()
}

fn rec(ns: u64, tid: u32, kind: u16, aux: u16, a: u64, b: u64) -> [u8; RECORD_BYTES] {
    let mut r = [0u8; RECORD_BYTES];
    r[0..8].copy_from_slice(&ns.to_ne_bytes());
    r[8..12].copy_from_slice(&tid.to_ne_bytes());
    r[12..14].copy_from_slice(&kind.to_ne_bytes());
    r[14..16].copy_from_slice(&aux.to_ne_bytes());
    r[16..24].copy_from_slice(&a.to_ne_bytes());
    r[24..32].copy_from_slice(&b.to_ne_bytes());
    r
}

#[test]
fn records_read_as_their_formats_with_tasks_named_by_their_switches() {
    let switch = format("sched", crate::ktrace::tests::SWITCH_FORMAT);
    let waking = format(
        "sched",
        "name: sched_waking\nID: 300\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
         \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n",
    );
    let specs = [
        spec("sched", "sched_switch").unwrap(),
        spec("sched", "sched_waking").unwrap(),
    ];
    let formats = [switch.clone(), waking.clone()];
    let (a, b) = (0xffff_1000u64, 0xffff_2000u64);
    let raw = [
        // a (tid 10) wakes b, then switches to b, which runs and switches back to a.
        (1, rec(100, 10, 1, 0, b, 0)),
        (1, rec(200, 10, 0, 1, b, a)),
        (1, rec(300, 20, 0, 1, a, b)),
        // A slot taken and never written.
        (1, rec(0, 0, 0, 0, 0, 0)),
        // b comes in again and runs: it is named by the record after.
        (1, rec(400, 10, 0, 0, 0xdead, a)),
        (1, rec(450, 33, 1, 0, 0xbeef, 0)),
        // a's memory, once 10 exited, is task 44's: named by its own switch out.
        (1, rec(600, 33, 0, 0, a, 0xdead)),
        (1, rec(700, 44, 0, 0, 0xdead, a)),
    ];
    let mut names = Names {
        fixed: Some(HashMap::from([
            (10, "ping".to_owned()),
            (20, "pong".to_owned()),
        ])),
        ..Names::default()
    };
    let (out, unwritten) = lay_out(&raw, &formats, &specs, &mut names);
    assert_eq!(unwritten, 1);
    assert_eq!(out.len(), 7);
    assert_eq!(switch.int(&out[5].raw, "next_pid"), Some(44));
    assert_eq!(switch.int(&out[6].raw, "next_pid"), Some(33));
    assert_eq!(out[0].event_id(), 300);
    assert_eq!(waking.int(&out[0].raw, "pid"), Some(20));
    assert_eq!(waking.int(&out[0].raw, "common_pid"), Some(10));
    assert_eq!(switch.int(&out[1].raw, "prev_pid"), Some(10));
    assert_eq!(switch.int(&out[1].raw, "next_pid"), Some(20));
    assert_eq!(switch.int(&out[1].raw, "prev_state"), Some(1));
    assert_eq!(switch.int(&out[2].raw, "next_pid"), Some(10));
    assert_eq!(switch.int(&out[3].raw, "next_pid"), Some(33));
    // An unknown task woken reads as -1; names come from the threads' ids, one gone
    // reading as its id; the priorities are not recorded.
    assert_eq!(waking.int(&out[4].raw, "pid"), Some(-1));
    assert_eq!(
        switch.string(&out[1].raw, "next_comm").as_deref(),
        Some("pong")
    );
    assert_eq!(
        switch.string(&out[1].raw, "prev_comm").as_deref(),
        Some("ping")
    );
    assert_eq!(
        switch.string(&out[3].raw, "next_comm").as_deref(),
        Some("tid 33")
    );
    assert_eq!(switch.int(&out[1].raw, "next_prio"), Some(0));
    assert_eq!(
        unrecorded_fields(&switch),
        ["prev_prio".to_owned(), "next_prio".to_owned()]
    );
    assert!(out.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
}

#[test]
fn a_field_a_record_leaves_at_zero_is_named_as_lacking() {
    let entry = format(
        "timer",
        "name: hrtimer_expire_entry\nID: 90\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
         \tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\
         \tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n\
         \tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n",
    );
    assert!(lacking_fields(&entry, &["hrtimer", "common_pid"]).is_empty());
    assert_eq!(
        lacking_fields(&entry, &["hrtimer", "now", "function"]),
        ["now".to_owned(), "function".to_owned()]
    );
    // A tracepoint no program records lacks every field asked for.
    let start = format(
        "timer",
        "name: hrtimer_start\nID: 91\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n",
    );
    assert_eq!(lacking_fields(&start, &["hrtimer"]), ["hrtimer".to_owned()]);
}

#[test]
fn interrupts_are_named_by_their_last_column() {
    let t = "           CPU0       CPU1\n  \
               0:         33          0   IO-APIC   2-edge      timer\n \
              24:          0        712  PCI-MSI 49152-edge      virtio0-config\n\
             NMI:          0          0   Non-maskable interrupts\n";
    let n = irq_names(t);
    assert_eq!(n.get(&0).map(String::as_str), Some("timer"));
    assert_eq!(n.get(&24).map(String::as_str), Some("virtio0-config"));
    assert_eq!(n.len(), 2);
}

#[test]
fn a_data_loc_string_is_written_where_it_is_read() {
    let f = format(
        "irq",
        "name: irq_handler_entry\nID: 100\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
         \tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
         \tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n",
    );
    let mut raw = vec![0u8; 16];
    f.put_int(&mut raw, "irq", 24);
    f.put_string(&mut raw, "name", "virtio0-config");
    assert_eq!(f.string(&raw, "name").as_deref(), Some("virtio0-config"));
    assert_eq!(f.int(&raw, "irq"), Some(24));
    assert!(unrecorded_fields(&f).is_empty());
}

#[test]
fn the_possible_cpus_are_counted() {
    assert!(possible_cpus().unwrap() >= crate::affinity().unwrap().len());
}

/// Where BPF may be used here (root), a pass records a system call this thread makes and
/// the thread filter keeps another's out; elsewhere the refusal is one line.
#[test]
fn a_pass_records_this_threads_calls() {
    let _serial = crate::ktrace::tests::tracefs_serial();
    let fs = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => return skip(&format!("needs tracefs: {e}")),
    };
    let cpu = crate::affinity().unwrap()[0];
    let events = [("raw_syscalls", "sys_enter"), ("sched", "sched_switch")];
    let mut t = match Tracer::open(&fs, &events, &[cpu], 1024) {
        Ok(t) => t,
        Err(u) => {
            assert!(!u.0.contains('\n'), "{u}");
            return skip(&format!("not traced here: {u}"));
        }
    };
    let me = crate::gettid() as u32;
    t.keep_threads(&[me]).unwrap();
    crate::set_affinity(&[cpu]).unwrap();
    t.enable().unwrap();
    for _ in 0..3 {
        crate::calls::raw_getppid();
    }
    let other = std::thread::spawn(crate::calls::raw_getppid);
    other.join().unwrap();
    t.disable().unwrap();
    let recs = t.drain();
    let enter = &t.formats()[0];
    let calls: Vec<&Record> = recs.iter().filter(|r| r.event_id() == enter.id).collect();
    assert!(
        calls.iter().all(|r| r.tid == me),
        "another thread's call was kept"
    );
    let getppid = calls
        .iter()
        .filter(|r| enter.int(&r.raw, "id") == Some(libc::SYS_getppid))
        .count();
    assert_eq!(getppid, 3, "{calls:?}");
    assert_eq!(t.lost(), 0);
}

/// Where BPF may be used here, a busy CPU's local timer interrupts are recorded with
/// their vector, each entry followed by its exit.
#[test]
fn a_pass_records_the_local_timer() {
    let _serial = crate::ktrace::tests::tracefs_serial();
    let fs = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => return skip(&format!("needs tracefs: {e}")),
    };
    let cpu = crate::affinity().unwrap()[0];
    let events = [
        ("irq_vectors", "local_timer_entry"),
        ("irq_vectors", "local_timer_exit"),
    ];
    let mut t = match Tracer::open(&fs, &events, &[cpu], 1024) {
        Ok(t) => t,
        Err(u) => {
            assert!(!u.0.contains('\n'), "{u}");
            return skip(&format!("not traced here: {u}"));
        }
    };
    crate::set_affinity(&[cpu]).unwrap();
    t.enable().unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_millis(60);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
    t.disable().unwrap();
    let recs = t.drain();
    let (entry, exit) = (&t.formats()[0], &t.formats()[1]);
    let kinds: Vec<bool> = recs.iter().map(|r| r.event_id() == entry.id).collect();
    assert!(kinds.iter().filter(|&&e| e).count() >= 1, "{recs:?}");
    // Entries and exits alternate, but for a record the kernel now and then drops without
    // counting it (no BPF program run for an interrupt: see noise's unrecorded timer
    // entries), which breaks a pair; how often moves with what else the machine runs (6
    // breaks in 40 records once under a loaded CI run). Records in no order, or one kind
    // lost, would break about half the pairs or all of them: at most a third is the bound.
    let breaks = kinds.windows(2).filter(|w| w[0] == w[1]).count();
    assert!(
        breaks * 3 <= kinds.len(),
        "entries and exits alternate: {breaks} breaks in {}",
        kinds.len()
    );
    let vectors: Vec<i64> = recs
        .iter()
        .map(|r| {
            let f = if r.event_id() == entry.id {
                entry
            } else {
                exit
            };
            f.int(&r.raw, "vector").unwrap()
        })
        .collect();
    assert!(
        vectors.iter().all(|&v| v == vectors[0] && v > 0),
        "{vectors:?}"
    );
    assert_eq!(t.lost(), 0);
}
