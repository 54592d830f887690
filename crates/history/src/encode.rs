//! How a document is stored since schema 3: the JSON text as it was given, LZ4-compressed in
//! the `documents` table, with a digest of the text so that pushing the same file again is
//! recognised without parsing it.

use crate::copy::{CopyMessage, CopyRows};
use crate::rows::table_rows;
use crate::{derived_run_id, env_fingerprint, HistoryError};
use oscost_model::{ResultDoc, SCHEMA};
use std::ops::Range;

/// The `encoding` of a document compressed with LZ4 (its uncompressed size first, as
/// `lz4_flex::compress_prepend_size` writes it).
pub(crate) const LZ4: &str = "lz4";

/// A result document ready to be stored: parsed once (so it is valid), and its rows already
/// in the binary `COPY` form PostgreSQL takes, the text it came from compressed straight into
/// its `documents` row. Made where the file is read (a push's parse threads), so the store
/// only sends bytes.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The document, as parsed.
    pub doc: ResultDoc,
    /// The id it is stored under: its own, or [`derived_run_id`] for one that has none.
    pub run_id: String,
    /// [`digest`] of the stored text.
    pub digest: String,
    /// Its rows of each table but `runs` (whose insert must see conflicts); the count of its
    /// `cases` rows is the run's `case_count`.
    pub(crate) rows: Rows,
    /// [`env_fingerprint`] of its environment, worked out (a JSON text hashed) beside the
    /// parse rather than in the store's thread.
    pub(crate) fingerprint: String,
    /// Where, in `rows.document`, the stored text is (compressed, its size first).
    body: Range<usize>,
}

/// The rows a document adds to the tables filled by `COPY`, one CopyData message each.
#[derive(Debug, Clone)]
pub(crate) struct Rows {
    /// Its row of `documents` (run id, encoding, digest, body).
    pub(crate) document: CopyMessage,
    /// Its row of `run_hosts`, if it names a host.
    pub(crate) hosts: CopyMessage,
    /// Its rows of `experiments`.
    pub(crate) experiments: CopyMessage,
    /// Its rows of `cases`.
    pub(crate) cases: CopyMessage,
}

impl Encoded {
    /// Reads the result document in `text` (any schema oscost reads) and keeps `text` itself
    /// when it is already what would be stored (an `oscost/2` document with its id); an older
    /// document is stored as it reads now, with its derived id.
    pub fn from_text(text: &str) -> Result<Encoded, oscost_model::ReadError> {
        let doc = oscost_model::read(text)?;
        // Only an oscost/2 document has an id (an older one with an id is refused as invalid).
        if doc.run_id.is_some() {
            let run_id = doc.run_id.clone().unwrap_or_default();
            return Ok(Encoded::with_text(doc, run_id, text.as_bytes()));
        }
        // An oscost/1 document: what is stored is the document in today's form, with its id.
        let invalid = |e: HistoryError| {
            oscost_model::ReadError::Invalid(serde::de::Error::custom(e.to_string()))
        };
        let run_id = derived_run_id(&doc).map_err(invalid)?;
        let mut stored = doc;
        stored.schema = SCHEMA.into();
        stored.run_id = Some(run_id.clone());
        let text = serde_json::to_string(&stored).map_err(oscost_model::ReadError::Invalid)?;
        Ok(Encoded::with_text(stored, run_id, text.as_bytes()))
    }

    /// `doc` as a run saves it: serialised here, under its id (or its derived one).
    pub fn from_doc(doc: &ResultDoc) -> Result<Encoded, HistoryError> {
        let run_id = match &doc.run_id {
            Some(id) => id.clone(),
            None => derived_run_id(doc)?,
        };
        let mut stored = doc.clone();
        stored.schema = SCHEMA.into();
        stored.run_id = Some(run_id.clone());
        let text = serde_json::to_string(&stored)?;
        Ok(Encoded::with_text(stored, run_id, text.as_bytes()))
    }

    fn with_text(doc: ResultDoc, run_id: String, text: &[u8]) -> Encoded {
        let digest = digest(text);
        // Sized for the compressor's worst case, so that the row never moves as it is written.
        let mut row = CopyRows::with_capacity(
            2 + 4 * 4
                + run_id.len()
                + LZ4.len()
                + digest.len()
                + 4
                + lz4_flex::block::get_maximum_output_size(text.len()),
        );
        row.row(4);
        row.text(&run_id);
        row.text(LZ4);
        row.text(&digest);
        let body = row.lz4(text);
        let (hosts, experiments, cases) = table_rows(&doc, &run_id);
        Encoded {
            rows: Rows {
                document: row.finish(),
                hosts,
                experiments,
                cases,
            },
            fingerprint: env_fingerprint(&doc.environment),
            doc,
            run_id,
            digest,
            body,
        }
    }

    /// The stored text, compressed (its uncompressed size first, as
    /// `lz4_flex::compress_prepend_size` writes it).
    pub(crate) fn body(&self) -> &[u8] {
        self.rows.document.slice(self.body.clone())
    }

    /// The stored size, compressed, in bytes.
    pub fn stored_len(&self) -> usize {
        self.body.len()
    }
}

/// The digest kept beside a stored document: XXH3-128 of its text, named so. It only tells
/// equal texts apart quickly; documents whose texts differ are compared as JSON.
pub fn digest(text: &[u8]) -> String {
    format!("xxh3-128:{:032x}", xxhash_rust::xxh3::xxh3_128(text))
}

/// The text of a stored document: `encoding` names how `body` holds it.
pub(crate) fn decode(run_id: &str, encoding: &str, body: &[u8]) -> Result<String, HistoryError> {
    let damaged = |why: String| HistoryError::Stored {
        run_id: run_id.into(),
        why,
    };
    match encoding {
        LZ4 => {
            let bytes = lz4_flex::decompress_size_prepended(body)
                .map_err(|e| damaged(format!("its stored document cannot be decompressed: {e}")))?;
            String::from_utf8(bytes)
                .map_err(|_| damaged("its stored document is not UTF-8 text".into()))
        }
        other => Err(damaged(format!(
            "its document is stored as `{other}`, which this oscost does not read (use a newer \
             oscost)"
        ))),
    }
}

/// What the first keys of a document say, read from its beginning only.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Peeked {
    /// Its `schema`, when found before `run_id` or the first object.
    pub schema: Option<String>,
    /// Its `run_id` in lower case, when found among its first keys.
    pub run_id: Option<String>,
}

/// The `schema` and `run_id` of a document from the start of its text (oscost writes them
/// first), without reading the rest: a re-push learns which files the store holds before
/// reading any whole. What is not found before the head ends is `None`: the whole document
/// must then be read to know it.
pub fn peek(head: &[u8]) -> Peeked {
    use serde::de::{Deserializer as _, Error as _, MapAccess, Visitor};
    struct Keys<'a>(&'a mut Peeked);
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "schema" => self.0.schema = map.next_value()?,
                    "run_id" => {
                        let id: Option<String> = map.next_value()?;
                        self.0.run_id = id.map(|v| v.to_ascii_lowercase());
                    }
                    // Skipped: in a head cut short, the look ends where the head does.
                    _ => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                if self.0.run_id.is_some() && self.0.schema.is_some() {
                    // Found: stop here rather than read on.
                    return Err(A::Error::custom("found"));
                }
            }
            Ok(())
        }
    }
    let mut out = Peeked::default();
    let mut de = serde_json::Deserializer::from_slice(head);
    // Either it ended early (found, or a value that is not a string, or the head's end) or it
    // read a whole small object: what was found is kept either way.
    let _ = de.deserialize_map(Keys(&mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keys_are_read_from_a_head() {
        let text = br#"{ "schema": "oscost/2", "run_id": "3F1C-AB", "environment": {"#;
        let p = peek(text);
        assert_eq!(p.schema.as_deref(), Some("oscost/2"));
        assert_eq!(p.run_id.as_deref(), Some("3f1c-ab"));
        // An oscost/1 document has no id: none is made up.
        let p = peek(br#"{"schema":"oscost/1","environment":{"kernel":"6.1"}}"#);
        assert_eq!(p.schema.as_deref(), Some("oscost/1"));
        assert_eq!(p.run_id, None);
        // Keys in another order are found past the values before them, unless the head ends.
        let sorted = br#"{"environment":{"a":[1,2]},"run_id":"ab","schema":"oscost/2"}"#;
        assert_eq!(peek(sorted).run_id.as_deref(), Some("ab"));
        assert_eq!(peek(&sorted[..20]), Peeked::default());
        assert_eq!(peek(b"not json"), Peeked::default());
        assert_eq!(peek(b""), Peeked::default());
    }

    #[test]
    fn a_text_goes_in_compressed_and_comes_back_whole() {
        let text = "{\"a\": [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]}".repeat(50);
        let body = lz4_flex::compress_prepend_size(text.as_bytes());
        assert!(body.len() < text.len() / 4, "{}", body.len());
        assert_eq!(decode("r", LZ4, &body).unwrap(), text);
        let e = decode("r", "zstd", &body).unwrap_err().to_string();
        assert!(e.contains("zstd") && e.contains("newer oscost"), "{e}");
        let e = decode("r", LZ4, &body[..body.len() / 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("decompressed"), "{e}");
        assert_ne!(digest(b"a"), digest(b"b"));
        assert_eq!(digest(b"a"), digest(b"a"));
    }
}
