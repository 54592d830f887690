//! Warnings and notes: a kind and a text.
//!
//! The document keeps a message as its text alone (documents written before kinds existed must
//! still read, and their bytes stay as they were), so a kind is carried in the text's first
//! words, its lead. Those words are defined here once: the measuring layer builds a message
//! from its kind ([`Message::new`]), and every reader recognises the kind from the same words
//! ([`MessageKind::of`]), so a renamed kind cannot fall out of a reader's grouping unnoticed.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What a message is about. Each kind but [`MessageKind::Other`] has fixed lead words its text
/// starts with, and is either a warning (what makes a figure less trustworthy and the user
/// could act on) or a note (context: nothing done would make the figure more trustworthy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    /// A 95 % interval wider than ±5 % of the figure, with the cause found.
    WideInterval,
    /// Other programs took a share of a point's CPUs during some runs (split).
    CpusShared,
    /// The CPUs gave less than half the speed-up they could (split).
    SpeedUpWithheld,
    /// The warm-up never settled and the samples after it drifted (the sampler).
    WarmUpUnsettled,
    /// The warm-up never settled, but the samples after it held steady (the sampler).
    BatchesVaried,
    /// An operation under 10 ns, exact only to about a nanosecond (the sampler).
    ShortOperation,
    /// The time budget cut the samples short (the sampler).
    TimeBudget,
    /// Wakeup preemption put more than one switch into a hop (ring, lockring).
    WakeupPreemption,
    /// Several tokens or free placement let hops pass without a switch (ring, lockring).
    HopsWithoutSwitch,
    /// `sched_yield` on separate CPUs found nothing to switch to (switch).
    YieldWithoutSwitch,
    /// A ring's peak memory could not be reset before it ran (ring).
    PeakMemoryNotReset,
    /// `--verify-order` put a shared log into the timed path (ring, lockring).
    VerifyOrder,
    /// The kernel does not count migrations, so pinning cannot be shown (ring, lockring, split).
    MigrationsNotCounted,
    /// The stored timeline of gaps holds only the first of them (noise).
    GapsThinned,
    /// The stored gaps are spread evenly over all of them (noise).
    SamplesThinned,
    /// With several CPUs the weights predict no share (timeline).
    NoSharePredicted,
    /// Fewer shootdown interrupts reached the other CPUs than operations were made (shootdown).
    FlushWithoutInterrupt,
    /// A cross-CPU figure woke a CPU from a halting idle state at least every other
    /// operation (net).
    HaltedCpuWoken,
    /// A thread waiting for its answer was woken without it and slept again (net).
    WokenWithoutAnswer,
    /// Fresh rings read outside the case's interval, which holds one ring's samples (uring's
    /// SQPOLL case).
    LevelMovesBetweenRings,
    /// The processes a figure was drawn from fell into two modes of cost (fault).
    ProcessModes,
    /// A figure's samples fell into two modes of cost, within its processes (fault).
    SampleModes,
    /// A check failed while others held the CPUs, so the experiment was measured again
    /// (the session).
    MeasuredTwice,
    /// Any other text: its own words say what it is.
    Other,
}

impl MessageKind {
    /// Every kind with lead words, i.e. all but [`MessageKind::Other`].
    pub const KNOWN: [MessageKind; 23] = [
        MessageKind::WideInterval,
        MessageKind::CpusShared,
        MessageKind::SpeedUpWithheld,
        MessageKind::WarmUpUnsettled,
        MessageKind::BatchesVaried,
        MessageKind::ShortOperation,
        MessageKind::TimeBudget,
        MessageKind::WakeupPreemption,
        MessageKind::HopsWithoutSwitch,
        MessageKind::YieldWithoutSwitch,
        MessageKind::PeakMemoryNotReset,
        MessageKind::VerifyOrder,
        MessageKind::MigrationsNotCounted,
        MessageKind::GapsThinned,
        MessageKind::SamplesThinned,
        MessageKind::NoSharePredicted,
        MessageKind::FlushWithoutInterrupt,
        MessageKind::HaltedCpuWoken,
        MessageKind::WokenWithoutAnswer,
        MessageKind::LevelMovesBetweenRings,
        MessageKind::ProcessModes,
        MessageKind::SampleModes,
        MessageKind::MeasuredTwice,
    ];

    /// The words every text of this kind starts with (empty for [`MessageKind::Other`]).
    pub const fn lead(self) -> &'static str {
        match self {
            MessageKind::WideInterval => "wide interval",
            MessageKind::CpusShared => "CPUs shared during some runs",
            MessageKind::SpeedUpWithheld => "speed-up withheld",
            MessageKind::WarmUpUnsettled => "warm-up did not settle",
            MessageKind::BatchesVaried => "batches still varied",
            MessageKind::ShortOperation => "an operation of ",
            MessageKind::TimeBudget => "time budget of ",
            MessageKind::WakeupPreemption => "wakeup preemption",
            MessageKind::HopsWithoutSwitch => "expected with ",
            MessageKind::YieldWithoutSwitch => "expected for yield on separate CPUs",
            MessageKind::PeakMemoryNotReset => "peak memory could not be reset",
            MessageKind::VerifyOrder => "--verify-order",
            MessageKind::MigrationsNotCounted => "migrations not counted",
            MessageKind::GapsThinned => "the timeline series holds the first",
            MessageKind::SamplesThinned => "the samples are ",
            MessageKind::NoSharePredicted => "no share is predicted",
            MessageKind::FlushWithoutInterrupt => "fewer shootdown interrupts than operations",
            MessageKind::HaltedCpuWoken => "woke a halted CPU",
            MessageKind::WokenWithoutAnswer => "woken without its answer",
            MessageKind::LevelMovesBetweenRings => "the level moves between rings",
            MessageKind::ProcessModes => "the processes fell into two modes",
            MessageKind::SampleModes => "the samples fell into two modes",
            MessageKind::MeasuredTwice => "measured twice",
            MessageKind::Other => "",
        }
    }

    /// Whether a message of this kind is a note (context) rather than a warning. An
    /// [`MessageKind::Other`] text is whichever its writer put it as.
    pub const fn is_note(self) -> bool {
        match self {
            // The times are real, or exact to what can be had, or not affected at all.
            MessageKind::BatchesVaried
            | MessageKind::ShortOperation
            | MessageKind::WakeupPreemption
            | MessageKind::PeakMemoryNotReset
            | MessageKind::MigrationsNotCounted
            | MessageKind::GapsThinned
            | MessageKind::SamplesThinned
            | MessageKind::NoSharePredicted
            | MessageKind::FlushWithoutInterrupt
            | MessageKind::HaltedCpuWoken
            | MessageKind::WokenWithoutAnswer
            | MessageKind::MeasuredTwice => true,
            MessageKind::WideInterval
            | MessageKind::CpusShared
            | MessageKind::SpeedUpWithheld
            | MessageKind::WarmUpUnsettled
            | MessageKind::TimeBudget
            | MessageKind::HopsWithoutSwitch
            | MessageKind::YieldWithoutSwitch
            | MessageKind::VerifyOrder
            | MessageKind::LevelMovesBetweenRings
            | MessageKind::ProcessModes
            | MessageKind::SampleModes
            | MessageKind::Other => false,
        }
    }

    /// The kind of a text: the kind whose lead it starts with, else [`MessageKind::Other`].
    pub fn of(text: &str) -> MessageKind {
        MessageKind::KNOWN
            .into_iter()
            .find(|k| text.starts_with(k.lead()))
            .unwrap_or(MessageKind::Other)
    }
}

/// A warning or a note: its kind and its whole text. Written to a document as the text alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    kind: MessageKind,
    text: String,
}

impl Message {
    /// A message of `kind`: its lead words followed by `rest` (for [`MessageKind::Other`], the
    /// whole text, which must not start with a known kind's lead).
    pub fn new(kind: MessageKind, rest: impl fmt::Display) -> Message {
        let text = format!("{}{rest}", kind.lead());
        debug_assert_eq!(MessageKind::of(&text), kind, "{text}");
        Message { kind, text }
    }

    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        self.kind
    }

    /// The whole text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The text after the kind's lead words (the whole text for [`MessageKind::Other`]).
    pub fn rest(&self) -> &str {
        &self.text[self.kind.lead().len()..]
    }

    /// Adds words at the end; the kind stays.
    pub fn push_str(&mut self, more: &str) {
        self.text.push_str(more);
    }
}

/// A text of any kind, recognised by its lead words.
impl From<String> for Message {
    fn from(text: String) -> Message {
        Message {
            kind: MessageKind::of(&text),
            text,
        }
    }
}

impl From<&str> for Message {
    fn from(text: &str) -> Message {
        Message::from(text.to_owned())
    }
}

impl From<Message> for String {
    fn from(m: Message) -> String {
        m.text
    }
}

impl From<&Message> for String {
    fn from(m: &Message) -> String {
        m.text.clone()
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A message reads as its text wherever a text is read.
impl std::ops::Deref for Message {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for Message {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl std::borrow::Borrow<str> for Message {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for Message {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Message {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Message, D::Error> {
        String::deserialize(d).map(Message::from)
    }
}

/// What one step of measuring met, warnings and notes apart, each in the order met.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Messages {
    /// What makes the figure less trustworthy.
    pub warnings: Vec<Message>,
    /// Context.
    pub notes: Vec<Message>,
}

impl Messages {
    /// Adds a message where its kind belongs: a note's kind to the notes, any other to the
    /// warnings.
    pub fn push(&mut self, m: Message) {
        if m.kind().is_note() {
            self.notes.push(m);
        } else {
            self.warnings.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lead_is_recognised_as_its_own_kind() {
        for k in MessageKind::KNOWN {
            assert!(!k.lead().is_empty(), "{k:?}");
            let m = Message::new(k, "3.5 of them: more words");
            assert_eq!(m.kind(), k);
            assert!(m.starts_with(k.lead()));
            assert_eq!(m.rest(), "3.5 of them: more words");
            assert_eq!(MessageKind::of(k.lead()), k, "{k:?}");
        }
        assert_eq!(
            MessageKind::of("12 trace records were lost"),
            MessageKind::Other
        );
        assert_eq!(Message::from("").kind(), MessageKind::Other);
        assert!(!MessageKind::KNOWN.contains(&MessageKind::Other));
    }

    #[test]
    fn a_message_is_its_text_on_the_wire() {
        for k in MessageKind::KNOWN {
            let m = Message::new(k, ": some detail");
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, serde_json::to_string(m.as_str()).unwrap());
            let back: Message = serde_json::from_str(&json).unwrap();
            assert_eq!(back, m);
            assert_eq!(back.kind(), k);
        }
        let other: Message = serde_json::from_str("\"a scripted warning\"").unwrap();
        assert_eq!(other.kind(), MessageKind::Other);
        assert_eq!(other, "a scripted warning");
    }

    #[test]
    fn notes_and_warnings_go_apart() {
        let notes = [
            MessageKind::BatchesVaried,
            MessageKind::ShortOperation,
            MessageKind::WakeupPreemption,
            MessageKind::PeakMemoryNotReset,
            MessageKind::MigrationsNotCounted,
            MessageKind::GapsThinned,
            MessageKind::SamplesThinned,
            MessageKind::NoSharePredicted,
            MessageKind::FlushWithoutInterrupt,
            MessageKind::HaltedCpuWoken,
            MessageKind::WokenWithoutAnswer,
            MessageKind::MeasuredTwice,
        ];
        for k in MessageKind::KNOWN {
            assert_eq!(k.is_note(), notes.contains(&k), "{k:?}");
        }
        assert!(!MessageKind::Other.is_note());
        let mut said = Messages::default();
        said.push(Message::new(MessageKind::TimeBudget, "300 ms reached"));
        said.push(Message::new(MessageKind::ShortOperation, "1 ns"));
        said.push("something else".into());
        assert_eq!(
            said.warnings,
            ["time budget of 300 ms reached", "something else"]
        );
        assert_eq!(said.notes, ["an operation of 1 ns"]);
    }

    #[test]
    fn words_added_keep_the_kind() {
        let mut m = Message::new(MessageKind::WideInterval, ": CI ±8.0 %");
        m.push_str("; other programs used 41 % of the CPUs");
        assert_eq!(m.kind(), MessageKind::WideInterval);
        assert_eq!(Message::from(String::from(m.clone())), m);
    }
}
