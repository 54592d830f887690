//! References of the machine itself: the controls oscost times around every experiment, and
//! the interruptions a spinning CPU sees.

use super::super::entry::{Entry, Needs, Read, Reference, Run, BASE, RUN};
use super::value;

/// `cargo xtask vs controls`.
pub const CONTROLS: Entry = Entry {
    name: "controls",
    about: "the machine's controls oscost times around every experiment: syscall(-1) and a \
            fixed user-space loop (benches/controls_ref.c)",
    reference: Reference::C("benches/controls_ref.c"),
    // Fixed in the program: 24 samples of each, as oscost's bursts.
    c_samples: [24, 24],
    runs: &[Run {
        c: &[&["{a}"]],
        // The shortest experiment whose document keeps the controls around it.
        oscost: &["syscall", "--calls", "enosys", "--quick"],
        ..RUN
    }],
    read: &[Read::Controls],
    ..BASE
};

/// `cargo xtask vs noise`.
pub const NOISE: Entry = Entry {
    name: "noise",
    about: "interruptions of a CPU spinning on the TSC: how many a second and their median \
            length, gaps above 1 µs (benches/noise_ref.c)",
    reference: Reference::C("benches/noise_ref.c"),
    c_samples: [1, 1],
    // The program spins where it is started and names its case by the CPU it ran on.
    runs: &[Run {
        c: &[&["{q:2:0.5}", "1000"]],
        oscost: &[
            "noise",
            "--duration",
            "{q:2s:500ms}",
            "--threshold-ns",
            "1000",
        ],
        ..RUN
    }],
    // Rates and lengths, counters of oscost's case: its median is not the figure here.
    read: &[
        Read::Counter("gaps_per_s"),
        Read::Counter("length_median_ns"),
    ],
    ..BASE
};

/// `cargo xtask vs tick`.
pub const TICK: Entry = Entry {
    name: "tick",
    about: "the cycles a POSIX timer's signal every 200 µs adds to fixed work, per event \
            (benches/tick_ref.c)",
    reference: Reference::C("benches/tick_ref.c"),
    // The program's runs a side are its third argument, as oscost's --runs.
    c_samples: [5, 3],
    runs: &[Run {
        // The same work: the iteration count oscost calibrated, read from its document. 200 µs:
        // on virtual machines a timer event can cost 20-30 µs, too much for 50 µs.
        c: &[&["{param:work_iterations}", "200000", "{s}"]],
        oscost: &[
            "tick",
            "--source",
            "signal",
            "--periods",
            "200us",
            "--work",
            "{q:100ms:20ms}",
            "--runs",
            "{s}",
        ],
        ..RUN
    }],
    read: &[Read::Counter("cycles_per_event")],
    ..BASE
};

/// One `timeline_ref` invocation: N workers of oscost's calibrated chunk on CPU A.
macro_rules! timeline_n {
    ($n:literal) => {
        &[$n, "{q:100:20}", "{param:chunk_iterations}", "{a}"]
    };
}

/// `cargo xtask vs timeline`.
pub const TIMELINE: Entry = Entry {
    name: "timeline",
    about: "1, 2 and 4 processes sharing one CPU, each doing equal chunks of work: workers \
            finished per second and their mean finish (benches/timeline_ref.c)",
    reference: Reference::C("benches/timeline_ref.c"),
    // One run of each N a round on both sides.
    c_samples: [1, 1],
    runs: &[Run {
        // The same chunk: the iteration count oscost calibrated, read from its document, so
        // what oscost adds around the work (its barrier, counter reads, bookkeeping) shows.
        c: &[timeline_n!("1"), timeline_n!("2"), timeline_n!("4")],
        oscost: &[
            "timeline",
            "--workers",
            "1,2,4",
            "--chunks",
            "{q:100:20}",
            "--rounds",
            "1",
        ],
        ..RUN
    }],
    // Throughput (higher is faster) and latency (lower is faster), counters of oscost's case.
    read: &[
        Read::Counter("throughput_workers_per_s"),
        Read::Counter("latency_avg_ns"),
    ],
    ..BASE
};

/// One point of `split`: oscost's run of it (calibrating the work) and the C program doing
/// the same units.
macro_rules! split_point {
    ($form:literal, $n:literal, $yield:literal, [$($more:literal),*]) => {
        Run {
            c: &[&[
                $form,
                $n,
                "{param:work_units}",
                "{param:step_units}",
                $yield,
            ]],
            oscost: &[
                "split", "--form", $form, "--tasks", $n, "--repeats", "1", "--work",
                "{q:500ms:20ms}", "--sets", "one", $($more),*
            ],
            ..RUN
        }
    };
}

/// `cargo xtask vs split`.
pub const SPLIT: Entry = Entry {
    name: "split",
    about: "fixed work done by one flow, 64 or 256 threads or processes on one CPU, yielding \
            or not: the total time, creation and joining included (benches/split_ref.c)",
    reference: Reference::C("benches/split_ref.c"),
    cflags: &["-pthread"],
    // One run of each point a round on both sides.
    c_samples: [1, 1],
    // The program names its set `one` from the single CPU taskset gives it.
    // Each point its own oscost run: the C program does the work units oscost calibrated in
    // it. A ratio near 1 says oscost's figure is the cost of the work and the tasks, not of
    // its own machinery (its barrier, per-task counters, /proc reading).
    runs: &[
        split_point!("single", "1", "0", []),
        split_point!("threads", "64", "0", []),
        split_point!("processes", "64", "0", []),
        split_point!("threads", "256", "1", ["--yield"]),
        split_point!("processes", "256", "1", ["--yield"]),
    ],
    ..BASE
};

/// `cargo xtask vs tick-forms`.
pub const TICK_FORMS: Entry = Entry {
    name: "tick-forms",
    about: "fixed work by one flow, 4 threads or 4 processes under SCHED_FIFO on one CPU, \
            undisturbed and under a timer thread at oscost's default periods (1 ms to 20 µs, \
            those this machine can keep): the time and the cycles each event costs \
            (benches/tickforms_ref.c)",
    reference: Reference::C("benches/tickforms_ref.c"),
    cflags: &["-pthread"],
    // SCHED_FIFO for the workers, as oscost's default under root: without it the timer
    // thread's preemption is not the only thing that moves the work.
    needs: &[Needs::Root],
    // Runs of each point a round, the program's fifth argument as oscost's --rounds.
    c_samples: [3, 1],
    runs: &[Run {
        // The same work: the units oscost calibrated, read from its document.
        c: &[&[
            "{param:work_units}",
            "{param:step_units}",
            "4",
            "fifo",
            "{s}",
            "{param:periods_ns}",
        ]],
        // oscost's default periods, as a user runs it: those this machine cannot keep (a
        // virtual machine's timer event may cost 30 µs) are left out with a warning, and the
        // C program runs the periods oscost kept.
        oscost: &[
            "tick-forms",
            "--tasks",
            "4",
            "--policies",
            "fifo",
            "--work",
            "{q:100ms:20ms}",
            "--rounds",
            "{s}",
        ],
        ..RUN
    }],
    derive: Some(tick_forms_per_event),
    read: &[
        Read::Medians,
        Read::Counter("cycles"),
        Read::Counter("events"),
    ],
    ..BASE
};

/// The cycles each timer event cost a point, from each side's own medians of the round:
/// (cycles under the period − cycles undisturbed) / events (`POINT.cycles_per_event`); none
/// where no event was counted.
fn tick_forms_per_event(figures: &[(String, f64)]) -> Vec<(String, f64)> {
    figures
        .iter()
        .filter_map(|(id, cycles)| {
            let point = id.strip_suffix(".cycles")?;
            let (form_policy, period) = point.rsplit_once('.')?;
            if period == "none" {
                return None;
            }
            let base = value(figures, &format!("{form_policy}.none.cycles"))?;
            let events = value(figures, &format!("{point}.events")).filter(|&e| e > 0.0)?;
            Some((
                format!("{point}.cycles_per_event"),
                (cycles - base) / events,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::figures;
    use super::*;

    #[test]
    fn cycles_per_event_are_over_the_undisturbed_point_and_never_over_no_event() {
        let f = figures(&[
            ("tick-forms.threads.fifo.none", 1e8),
            ("tick-forms.threads.fifo.none.cycles", 1000.0),
            ("tick-forms.threads.fifo.none.events", 0.0),
            ("tick-forms.threads.fifo.1ms.cycles", 1500.0),
            ("tick-forms.threads.fifo.1ms.events", 100.0),
            ("tick-forms.threads.fifo.50us.cycles", 1200.0),
            ("tick-forms.threads.fifo.50us.events", 0.0),
        ]);
        assert_eq!(
            tick_forms_per_event(&f),
            figures(&[("tick-forms.threads.fifo.1ms.cycles_per_event", 5.0)])
        );
    }
}
