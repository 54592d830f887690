//! `oscost history push`: result files into a store, read by a few threads just ahead of the
//! one that stores them.

use super::{conflict, read_error};
use crate::stdout::print_stdout;
use oscost_history::{Encoded, History, Saved};
use oscost_report::termtext::one_line;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};

/// How many documents one transaction of `history push` stores: a commit waits for the disk
/// once per batch instead of once per file.
const BATCH: usize = 100;

/// How much of a file's beginning is read to find its run id before the store is asked.
const HEAD: usize = 4096;

/// How many threads read, parse and compress the files.
const READERS: usize = 2;

/// How many documents may be read (or being read) and not yet taken by the store; a file the
/// store holds already, or one that cannot be read, does not count. Enough that the store finds
/// documents waiting whenever the readers are not much slower than the server; few enough
/// that the readers do not run far ahead, taking the CPU the server (which may share the
/// machine) needs now for documents it will not see for long, and that the last documents
/// are stored soon after they are read rather than left for the server alone at the end.
const AHEAD: usize = 16;

/// What became of one file of a push before the store took it.
enum Prepared {
    /// Read, checked and compressed, to be stored.
    Doc(Box<Encoded>),
    /// The store holds its run with this very text: nothing to send.
    There(String),
    /// It could not be read, in words.
    Unread(String),
}

/// What the store holds of a batch's files: run id → digest of the stored text.
type Known = HashMap<String, Option<String>>;

/// Pushes the files in batches, each batch one transaction: a bad file is named on stderr and
/// the others still go in. For each batch the files' run ids are read from their first bytes
/// and looked up in one query; a file whose run the store holds with the same text (by its
/// digest) is not parsed. The others are read, parsed once and compressed by [`READERS`]
/// threads, which also write the rows the store will send (see [`Encoded`]), in the files'
/// order and at most [`AHEAD`] documents ahead of the store; the store takes whatever is ready
/// each time it has sent what it took before, so the server starts on the first documents
/// at once and ends soon after the last is read.
pub(super) fn push(store: &mut History, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut tally = Tally::default();
    let ahead = Ahead::new(files);
    std::thread::scope(|scope| -> anyhow::Result<()> {
        // Readers stop when the store does, whether it ended or failed.
        let _stop = Stop {
            ahead: &ahead,
            store: true,
        };
        for _ in 0..READERS {
            scope.spawn(|| ahead.read());
        }
        // Documents freed beside the store's work, not in its way.
        let (free, freed) = mpsc::channel::<Vec<Encoded>>();
        scope.spawn(move || freed.into_iter().for_each(drop));
        let batches = files.len().div_ceil(BATCH);
        if batches > 0 {
            ahead.know(known_runs(store, batch(files, 0))?);
        }
        for k in 0..batches {
            // The next batch's look-up before this one's transaction, so the readers need not
            // wait for it when they reach that batch.
            if k + 1 < batches {
                ahead.know(known_runs(store, batch(files, k + 1))?);
            }
            store_batch(store, &ahead, k, &free, &mut tally)?;
        }
        Ok(())
    })?;
    let Tally {
        pushed,
        there,
        not_read,
        refused,
    } = tally;
    let mut last = format!("pushed {pushed}, already there {there}");
    if !not_read.is_empty() {
        let _ = write!(
            last,
            ", {} not read (not pushed: {})",
            not_read.len(),
            not_read.join(", ")
        );
    }
    if !refused.is_empty() {
        let _ = write!(
            last,
            ", {} refused (another run's content under a stored id: {})",
            refused.len(),
            refused.join(", ")
        );
    }
    print_stdout(&format!("{} ({})\n", one_line(&last), store.shown()))?;
    Ok(if !not_read.is_empty() || !refused.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// The files of batch `k`.
fn batch(files: &[PathBuf], k: usize) -> &[PathBuf] {
    &files[k * BATCH..files.len().min((k + 1) * BATCH)]
}

/// What a push did so far.
#[derive(Default)]
struct Tally {
    pushed: usize,
    there: usize,
    not_read: Vec<String>,
    refused: Vec<String>,
}

/// The runs of `files` the store already holds, by the id read from each file's first bytes,
/// with the digest of the stored text: one query.
fn known_runs(store: &History, files: &[PathBuf]) -> anyhow::Result<Known> {
    use std::io::Read as _;
    let ids: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let mut head = Vec::with_capacity(HEAD);
            std::fs::File::open(f)
                .and_then(|h| h.take(HEAD as u64).read_to_end(&mut head))
                .ok()?;
            oscost_history::peek(&head).run_id
        })
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    Ok(store.stored_digests(&ids)?)
}

/// Reads one file: only digested when `known` holds its run with the same text, else parsed
/// and compressed.
fn prepare(file: &PathBuf, known: &Known) -> Prepared {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            return Prepared::Unread(match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_owned(),
                _ => e.to_string(),
            })
        }
    };
    if let Some(id) = oscost_history::peek(&bytes).run_id {
        if let Some(Some(stored)) = known.get(&id) {
            if *stored == oscost_history::digest(&bytes) {
                return Prepared::There(id);
            }
        }
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Prepared::Unread("not a text file".to_owned());
    };
    match Encoded::from_text(&text) {
        Ok(e) => Prepared::Doc(Box::new(e)),
        Err(e) => Prepared::Unread(read_error(e)),
    }
}

/// Stores batch `k` in one transaction, its documents taken from the readers part by part as
/// they are ready, each part freed on `free` once sent; then prints a line per file, in
/// order.
fn store_batch(
    store: &mut History,
    ahead: &Ahead,
    k: usize,
    free: &mpsc::Sender<Vec<Encoded>>,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let files = batch(ahead.files, k);
    let end = k * BATCH + files.len();
    // A line per file, `None` where the store's answer is to come.
    let mut lines: Vec<Option<String>> = Vec::with_capacity(files.len());
    let mut names = Vec::new();
    let next = || loop {
        let taken = ahead.take(end)?;
        let mut part = Vec::new();
        for (i, p) in taken {
            let file = &ahead.files[i];
            match p {
                Prepared::Doc(e) => {
                    part.push(*e);
                    names.push(file);
                    lines.push(None);
                }
                Prepared::There(id) => {
                    tally.there += 1;
                    lines.push(Some(format!("already there: {id} ({})", file.display())));
                }
                Prepared::Unread(why) => {
                    eprintln!(
                        "oscost: {}",
                        one_line(&format!("{}: {why}", file.display()))
                    );
                    tally.not_read.push(file.display().to_string());
                    lines.push(Some(String::new()));
                }
            }
        }
        if !part.is_empty() {
            return Some(part);
        }
    };
    let stored = |part| {
        // The freeing thread ends only after the store: a send cannot fail.
        let _ = free.send(part);
    };
    let saved: Vec<Saved> = store.save_parts(next, stored)?;
    let mut saved = saved.into_iter().zip(names);
    for line in lines {
        let line = match line {
            Some(l) => l,
            None => {
                let Some((saved, file)) = saved.next() else {
                    continue;
                };
                if saved.differs {
                    eprintln!("oscost: {}", one_line(&conflict(file, &saved.run_id)));
                    tally.refused.push(file.display().to_string());
                    continue;
                }
                if saved.new {
                    tally.pushed += 1;
                    format!("pushed {} ({})", saved.run_id, file.display())
                } else {
                    tally.there += 1;
                    format!("already there: {} ({})", saved.run_id, file.display())
                }
            }
        };
        if !line.is_empty() {
            // A file name may hold a newline or an escape sequence: one line, shown.
            print_stdout(&format!("{}\n", one_line(&line)))?;
        }
    }
    Ok(())
}

/// The files read ahead of the store, handed over in their order.
struct Ahead<'a> {
    files: &'a [PathBuf],
    state: Mutex<State>,
    /// Signalled at every change of `state`: few threads wait on it.
    changed: Condvar,
}

struct State {
    /// The first file the store has not taken.
    taken: usize,
    /// The first file no reader has started.
    next: usize,
    /// The files from `taken` on that readers started, in order: `None` while being read.
    read: VecDeque<Option<Prepared>>,
    /// Of those, the ones being read or read as documents to store: what [`AHEAD`] bounds.
    docs: usize,
    /// What the store holds of each batch's files, as the store looked it up: a file is read
    /// only once its batch's is here.
    known: Vec<Arc<Known>>,
    /// The store has ended (or failed): readers stop.
    stopped: bool,
    /// A reader panicked: the file it was reading will never be ready.
    failed: bool,
}

impl<'a> Ahead<'a> {
    fn new(files: &'a [PathBuf]) -> Ahead<'a> {
        Ahead {
            files,
            state: Mutex::new(State {
                taken: 0,
                next: 0,
                read: VecDeque::with_capacity(AHEAD),
                docs: 0,
                known: Vec::new(),
                stopped: false,
                failed: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A reader that panicked holds no invariant half-made: its panic reaches the push
        // when the threads are joined.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'g>(&self, s: MutexGuard<'g, State>) -> MutexGuard<'g, State> {
        self.changed.wait(s).unwrap_or_else(|p| p.into_inner())
    }

    /// Gives the readers the next batch's look-up.
    fn know(&self, known: Known) {
        self.lock().known.push(Arc::new(known));
        self.changed.notify_all();
    }

    /// A reader: takes the next file while it may run ahead, until there are none or the
    /// store stops.
    fn read(&self) {
        // A reader that panics ends the store's wait for it.
        let _failed = Stop {
            ahead: self,
            store: false,
        };
        loop {
            let (i, known) = {
                let mut s = self.lock();
                loop {
                    if s.stopped || s.next == self.files.len() {
                        return;
                    }
                    if s.docs < AHEAD && s.next / BATCH < s.known.len() {
                        break;
                    }
                    s = self.wait(s);
                }
                let i = s.next;
                s.next += 1;
                s.docs += 1;
                s.read.push_back(None);
                (i, Arc::clone(&s.known[i / BATCH]))
            };
            let p = prepare(&self.files[i], &known);
            let mut s = self.lock();
            if !matches!(p, Prepared::Doc(_)) {
                s.docs -= 1;
            }
            let at = i - s.taken;
            s.read[at] = Some(p);
            drop(s);
            self.changed.notify_all();
        }
    }

    /// The store's side: waits for the first file not taken, then takes it and every file
    /// after it already read, up to `end` (the batch's end), with their indices. `None` when
    /// every file up to `end` is taken.
    fn take(&self, end: usize) -> Option<Vec<(usize, Prepared)>> {
        let mut s = self.lock();
        if s.taken >= end {
            return None;
        }
        while !matches!(s.read.front(), Some(Some(_))) {
            // Before the batch is committed short of a file: the reader's panic is shown
            // when the threads are joined.
            assert!(!s.failed, "a thread reading the files panicked");
            s = self.wait(s);
        }
        let mut out = Vec::new();
        while s.taken < end {
            match s.read.front() {
                Some(Some(_)) => {}
                _ => break,
            }
            if let Some(Some(p)) = s.read.pop_front() {
                if matches!(p, Prepared::Doc(_)) {
                    s.docs -= 1;
                }
                out.push((s.taken, p));
            }
            s.taken += 1;
        }
        drop(s);
        self.changed.notify_all();
        Some(out)
    }
}

/// When the store ends (`store`), stops the readers; when a reader panics, stops the store's
/// wait for it.
struct Stop<'a, 'b> {
    ahead: &'a Ahead<'b>,
    store: bool,
}

impl Drop for Stop<'_, '_> {
    fn drop(&mut self) {
        let mut s = self.ahead.lock();
        if self.store {
            s.stopped = true;
        } else if std::thread::panicking() {
            s.failed = true;
        }
        drop(s);
        self.ahead.changed.notify_all();
    }
}
