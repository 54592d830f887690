//! The kernel view's tests, on records made by hand.

use super::*;

fn enter(k: &str, l: &str) -> Kind {
    Kind::Enter(k.into(), l.into())
}

fn exit(k: &str) -> Kind {
    Kind::Exit(k.into())
}

fn switch(prev: i64, next: i64, comm: &str) -> Kind {
    Kind::Switch {
        prev_tid: prev,
        prev_state: 0,
        next_tid: next,
        next_comm: comm.into(),
    }
}

/// A tick with its softirq, a device interrupt, another task, and a gap nothing explains.
#[test]
fn known_events_are_given_to_known_gaps() {
    let evs = [
        (100.0, enter("local_timer", LOCAL_TIMER)),
        (103.0, exit("local_timer")),
        (104.0, enter("softirq", "softirq TIMER")),
        (105.0, exit("softirq")),
        (200.0, enter("irq", "irq 36 virtio1-req.0")),
        (202.0, exit("irq")),
        (300.0, switch(7, 9, "kworker/0:1")),
        (310.0, enter("local_timer", LOCAL_TIMER)),
        (311.0, exit("local_timer")),
        (340.0, switch(9, 7, "oscost-noise")),
    ];
    let refs: Vec<(f64, &Kind)> = evs.iter().map(|(t, k)| (*t, k)).collect();
    let segs = segments(&refs, 7);
    assert_eq!(segs.len(), 6, "{segs:?}");
    // Inside the other task's run, the tick is the tick's and the rest the task's.
    assert_eq!(segs[3].label, "task kworker/0:1");
    assert_eq!((segs[3].from, segs[3].to), (300.0, 310.0));
    assert_eq!(segs[4].label, LOCAL_TIMER);

    let gaps = [(99.0, 7.0), (199.5, 3.0), (299.0, 42.0), (400.0, 5.0)];
    let v = attribute(&gaps, &segs, 0.5);
    assert_eq!(v[0].source.as_deref(), Some(LOCAL_TIMER));
    assert!(v[0].timer);
    assert_eq!(v[0].explained, 4.0);
    assert_eq!(v[1].source.as_deref(), Some("irq 36 virtio1-req.0"));
    assert_eq!(v[2].source.as_deref(), Some("task kworker/0:1"));
    assert!(v[2].timer);
    assert_eq!(v[2].explained, 40.0);
    assert_eq!(v[3].source, None);

    let lens: Vec<f64> = gaps.iter().map(|g| g.1).collect();
    let t = table(&lens, &v);
    assert_eq!(t[0].source, "task kworker/0:1");
    assert_eq!(t.iter().map(|r| r.count).sum::<usize>(), gaps.len());
    let outside = t.iter().find(|r| r.source == OUTSIDE).unwrap();
    assert_eq!((outside.count, outside.lost), (1, 5.0));
}

#[test]
fn an_exit_without_its_entry_changes_nothing() {
    let evs = [
        (1.0, exit("irq")),
        (2.0, enter("irq", "irq 1 x")),
        (4.0, exit("irq")),
    ];
    let refs: Vec<(f64, &Kind)> = evs.iter().map(|(t, k)| (*t, k)).collect();
    let segs = segments(&refs, 1);
    assert_eq!(segs.len(), 1);
    assert_eq!((segs[0].from, segs[0].to), (2.0, 4.0));
}

/// A lost exit must not give the handler everything up to its next entry (a run of one task
/// has no switch to end it).
#[test]
fn an_entry_whose_exit_was_lost_ends_at_the_next_entry_unclaimed() {
    let evs = [
        (10.0, enter("local_timer", LOCAL_TIMER)),
        (60.0, enter("local_timer", LOCAL_TIMER)),
        (62.0, exit("local_timer")),
        (110.0, enter("local_timer", LOCAL_TIMER)),
        (113.0, exit("local_timer")),
    ];
    let refs: Vec<(f64, &Kind)> = evs.iter().map(|(t, k)| (*t, k)).collect();
    let segs = segments(&refs, 1);
    let spans: Vec<(f64, f64)> = segs.iter().map(|s| (s.from, s.to)).collect();
    assert_eq!(spans, [(60.0, 62.0), (110.0, 113.0)], "{segs:?}");
}

#[test]
fn the_time_map_is_linear_between_its_anchors() {
    let m = TimeMap::new((1000, 500), (4000, 1500));
    assert_eq!(m.ticks(500), 1000.0);
    assert_eq!(m.ticks(1000), 2500.0);
    assert_eq!(m.ticks(1500), 4000.0);
}

#[test]
fn keys_are_plain() {
    assert_eq!(key("irq 36 virtio1-req.0"), "irq_36_virtio1_req_0");
    assert_eq!(key(OUTSIDE), "outside_the_kernel_s_view");
}

/// A tracefs format of `sys:name` with the common fields and `fields` after them.
fn format(sys: &str, name: &str, id: u64, fields: &str) -> Format {
    let text = format!(
        "name: {name}\nID: {id}\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n{fields}"
    );
    oscost_sys::ktrace::parse_format(sys, &text).unwrap()
}

/// A record of tracepoint `id` at `ns` on CPU 1, with `tail` from offset 8.
fn record(id: u16, ns: u64, tail: &[u8]) -> Record {
    let mut raw = vec![0u8; 8];
    raw[0..2].copy_from_slice(&id.to_ne_bytes());
    raw.extend_from_slice(tail);
    Record {
        time_ns: ns,
        cpu: 1,
        pid: 7,
        tid: 7,
        raw,
    }
}

#[test]
fn timer_callbacks_softirqs_and_signals_decode_from_fixed_records() {
    let hrtimer = "\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n";
    let fmts = [
        format("timer", "hrtimer_expire_entry", 101, hrtimer),
        format("timer", "hrtimer_expire_exit", 102, hrtimer),
        format(
            "irq",
            "softirq_entry",
            103,
            "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n",
        ),
        format(
            "signal",
            "signal_deliver",
            104,
            "\tfield:int sig;\toffset:8;\tsize:4;\tsigned:1;\n",
        ),
    ];
    let dec = Decoder::new(&fmts);
    let map = TimeMap::new((0, 0), (2000, 1000));
    let kinds: Vec<(f64, u32, Kind)> = [
        record(101, 10, &[0; 8]),
        record(102, 20, &[0; 8]),
        record(103, 30, &9u32.to_ne_bytes()),
        record(103, 40, &12u32.to_ne_bytes()),
        record(104, 50, &14i32.to_ne_bytes()),
        record(105, 60, &[]),
    ]
    .iter()
    .filter_map(|r| dec.decode(r, &map))
    .map(|e| (e.ticks, e.cpu, e.kind))
    .collect();
    assert_eq!(
        kinds,
        vec![
            (20.0, 1, enter("hrtimer", CALLBACKS)),
            (40.0, 1, exit("hrtimer")),
            (60.0, 1, enter("softirq", "softirq RCU")),
            (80.0, 1, enter("softirq", "softirq 12")),
            (100.0, 1, Kind::Signal),
        ],
        "a record of no known tracepoint is left out"
    );
}

#[test]
fn a_signal_neither_starts_nor_ends_a_stretch() {
    let evs = [
        (1.0, enter("local_timer", LOCAL_TIMER)),
        (2.0, Kind::Signal),
        (4.0, exit("local_timer")),
        (5.0, Kind::Signal),
    ];
    let refs: Vec<(f64, &Kind)> = evs.iter().map(|(t, k)| (*t, k)).collect();
    let segs = segments(&refs, 1);
    assert_eq!(segs.len(), 1);
    assert_eq!((segs[0].from, segs[0].to), (1.0, 4.0));
}

#[test]
fn records_lost_by_tracepoint_are_named_and_counted() {
    let none = BTreeMap::new();
    assert_eq!(lost_words(&none), "");
    assert!(lost_counters(&none).is_empty());
    let by = BTreeMap::from([
        ("irq_vectors:local_timer_entry".to_owned(), 2),
        ("sched:sched_switch".to_owned(), 5),
    ]);
    let words = lost_words(&by);
    assert!(
        words.contains("irq_vectors:local_timer_entry 2, sched:sched_switch 5"),
        "{words}"
    );
    assert_eq!(
        lost_counters(&by),
        vec![
            (
                "trace_records_lost.irq_vectors.local_timer_entry".to_owned(),
                2.0
            ),
            ("trace_records_lost.sched.sched_switch".to_owned(), 5.0),
        ]
    );
}

#[test]
fn the_noise_events_name_real_tracepoints() {
    for (name, _) in VECTORS {
        assert!(NOISE_EVENTS.contains(&("irq_vectors", &*format!("{name}_entry"))));
        assert!(NOISE_EVENTS.contains(&("irq_vectors", &*format!("{name}_exit"))));
    }
}

/// Handlers are the OS's, the host's gaps the host's, and a task by what `/proc` says of its
/// tid: kthreadd (2) is a kernel thread, this test's own thread a program's.
#[test]
fn each_source_is_the_os_s_a_program_s_or_the_host_s() {
    let me = oscost_sys::gettid() as i64;
    assert_eq!(kernel_thread(2), Some(true));
    assert_eq!(kernel_thread(me), Some(false));
    let evs = [
        switch(me, 2, "kthreadd"),
        switch(2, me, "a-program"),
        switch(me, 0, "swapper/0"),
    ];
    let tasks = whose_sources(evs.iter());
    assert_eq!(whose("task kthreadd", &tasks), Whose::Os);
    assert_eq!(whose("task a-program", &tasks), Whose::Programs);
    assert_eq!(whose(LOCAL_TIMER, &tasks), Whose::Os);
    assert_eq!(whose("irq 36 virtio1-req.0", &tasks), Whose::Os);
    assert_eq!(whose(OUTSIDE, &tasks), Whose::Outside);
    // A task never seen switching in (its tid unknown) is counted as a program's.
    assert_eq!(whose("task gone", &tasks), Whose::Programs);
}
