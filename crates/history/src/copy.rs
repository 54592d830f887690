//! Rows in PostgreSQL's binary `COPY` format, written where they are made (the thread that
//! parsed the document) straight into the buffer that goes to the server: each buffer is one
//! whole CopyData message, its 5-byte header first, so the connection writes it to the socket
//! as it is instead of copying it into a payload and then into its output buffer.

use std::cell::RefCell;
use std::ops::Range;

/// CopyData's header: the tag `d` and the message's length, which counts itself (4 bytes) but
/// not the tag.
const FRAME: usize = 5;

/// Rows being written: field by field, into one growing message.
///
/// The buffer is zero-filled ahead of what is written (`len` says how much is), so that
/// compressing into it needs no zeroing of its own: `vec![0; n]` asks the allocator for zeroed
/// memory, which a large allocation gets from the kernel already zero.
#[derive(Debug)]
pub(crate) struct CopyRows {
    buf: Vec<u8>,
    len: usize,
    rows: usize,
}

impl CopyRows {
    /// An empty message with room for `bytes` of rows before it grows.
    pub(crate) fn with_capacity(bytes: usize) -> CopyRows {
        let mut buf = vec![0; FRAME + bytes];
        buf[0] = b'd';
        CopyRows {
            buf,
            len: FRAME,
            rows: 0,
        }
    }

    /// Room for `n` more bytes; grows by doubling, like a `Vec`.
    fn room(&mut self, n: usize) -> &mut [u8] {
        let end = self.len + n;
        if end > self.buf.len() {
            self.buf.resize(end.max(2 * self.buf.len()), 0);
        }
        &mut self.buf[self.len..end]
    }

    fn put(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        self.room(n).copy_from_slice(bytes);
        self.len += n;
    }

    /// Starts a row of `fields` fields (the fields follow).
    pub(crate) fn row(&mut self, fields: i16) {
        self.put(&fields.to_be_bytes());
        self.rows += 1;
    }

    /// A NULL field: length -1.
    pub(crate) fn null(&mut self) {
        self.put(&(-1i32).to_be_bytes());
    }

    fn field(&mut self, bytes: &[u8]) {
        self.put(&(bytes.len() as i32).to_be_bytes());
        self.put(bytes);
    }

    /// A TEXT field.
    pub(crate) fn text(&mut self, s: &str) {
        self.field(s.as_bytes());
    }

    /// An INTEGER field: 4 bytes, the value cut to 32 bits as the column keeps it (as the
    /// generic `Cell` path always wrote it).
    pub(crate) fn int4(&mut self, i: i64) {
        self.field(&(i as i32).to_be_bytes());
    }

    /// An INTEGER field or NULL.
    pub(crate) fn opt_int4(&mut self, i: Option<i64>) {
        match i {
            Some(i) => self.int4(i),
            None => self.null(),
        }
    }

    /// A DOUBLE PRECISION field; NaN is stored as NULL, as everywhere in the history.
    pub(crate) fn real(&mut self, v: f64) {
        if v.is_nan() {
            self.null();
        } else {
            self.field(&v.to_be_bytes());
        }
    }

    /// A BYTEA field holding `text` compressed with LZ4 exactly as
    /// `lz4_flex::compress_prepend_size` writes it (the uncompressed size first, a
    /// little-endian u32), compressed in place here rather than into a vector of its own that
    /// would then be copied. Returns where the stored bytes (the size and the block) are.
    pub(crate) fn lz4(&mut self, text: &[u8]) -> Range<usize> {
        let length_at = self.len;
        let start = length_at + 4;
        let block = start + 4;
        // The compressor wants its worst case as room; what it does not use is cut off below.
        let room = lz4_flex::block::get_maximum_output_size(text.len());
        self.room(8 + room);
        self.buf[start..block].copy_from_slice(&(text.len() as u32).to_le_bytes());
        let n = compress(text, &mut self.buf[block..block + room]);
        self.len = block + n;
        let stored = (self.len - start) as i32;
        self.buf[length_at..start].copy_from_slice(&stored.to_be_bytes());
        start..self.len
    }

    /// The rows as the CopyData message that carries them: its length filled in, the room
    /// left over given back to the allocator (a shrink in place, not a copy).
    pub(crate) fn finish(mut self) -> CopyMessage {
        let length = (self.len - 1) as i32;
        self.buf[1..FRAME].copy_from_slice(&length.to_be_bytes());
        self.buf.truncate(self.len);
        self.buf.shrink_to_fit();
        CopyMessage {
            buf: self.buf,
            rows: self.rows,
        }
    }
}

/// Rows in the binary `COPY` format, ready to send: one whole CopyData message.
#[derive(Debug, Clone)]
pub(crate) struct CopyMessage {
    buf: Vec<u8>,
    rows: usize,
}

impl CopyMessage {
    /// The message, its header first, as it goes on the wire.
    pub(crate) fn wire(&self) -> &[u8] {
        &self.buf
    }

    /// The rows without the message's header: what a `COPY ... FROM STDIN (FORMAT binary)`
    /// reads between the format's header and trailer.
    #[cfg(test)]
    pub(crate) fn rows_bytes(&self) -> &[u8] {
        &self.buf[FRAME..]
    }

    /// Bytes `range` of the message, as [`CopyRows::lz4`] returned it.
    pub(crate) fn slice(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// How many rows it holds.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }
}

/// The compressor's hash tables, one for short inputs and one for long, kept by each thread
/// that compresses so that a document does not allocate and zero them anew (lz4_flex would
/// for each call).
#[derive(Default)]
struct Tables {
    small: Option<lz4_flex::block::CompressTable>,
    large: Option<lz4_flex::block::CompressTable>,
}

thread_local! {
    static TABLES: RefCell<Tables> = RefCell::new(Tables::default());
}

/// Compresses `text` into `out` (room for the worst case) and returns the bytes written: the
/// very bytes `lz4_flex::compress_prepend_size` writes after its size. lz4_flex picks its
/// 16-bit table below `u16::MAX` bytes of input and its 32-bit one from there (they hash
/// differently, so the choice shows in the output); the same choice is made here, each table
/// kept apart so that neither is ever used for the other's inputs.
fn compress(text: &[u8], out: &mut [u8]) -> usize {
    use lz4_flex::block::{compress_into_with_table, CompressTable};
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let table = if text.len() < u16::MAX as usize {
            t.small.get_or_insert_with(CompressTable::small)
        } else {
            t.large.get_or_insert_with(CompressTable::large)
        };
        compress_into_with_table(text, out, table)
            // `out` has the room lz4_flex asks for: it cannot be too small.
            .expect("LZ4 output sized to its worst case")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text that compresses, of any length.
    fn text(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let words = b"{\"median_ns\": 1234.5, \"samples\": 100}";
                if (x >> 60) < 6 {
                    words[i % words.len()]
                } else {
                    b'0' + (x >> 58) as u8 % 10
                }
            })
            .collect()
    }

    #[test]
    fn lz4_in_place_writes_what_compress_prepend_size_writes() {
        // Both tables, their boundary, and the tables reused across sizes in any order.
        let sizes = [
            0, 3, 12, 13, 1000, 65_534, 65_535, 65_536, 300_000, 20, 70_000, 65_534,
        ];
        for (seed, len) in sizes.into_iter().enumerate() {
            let input = text(len, seed as u64);
            let mut rows = CopyRows::with_capacity(0);
            rows.row(1);
            let stored = rows.lz4(&input);
            let m = rows.finish();
            assert_eq!(
                m.slice(stored.clone()),
                lz4_flex::compress_prepend_size(&input),
                "{len} bytes"
            );
            assert_eq!(
                lz4_flex::decompress_size_prepended(m.slice(stored.clone())).unwrap(),
                input
            );
            // The field's length, then the stored bytes, end the message.
            let b = m.rows_bytes();
            assert_eq!(
                &b[2..6],
                &((stored.end - stored.start) as i32).to_be_bytes()
            );
            assert_eq!(stored.end, m.wire().len());
        }
    }

    #[test]
    fn a_message_is_framed_as_copy_data() {
        let mut rows = CopyRows::with_capacity(1);
        rows.row(4);
        rows.text("ab");
        rows.int4(i64::from(i32::MAX) + 2);
        rows.real(f64::NAN);
        rows.opt_int4(None);
        rows.row(1);
        rows.real(-1.5);
        let m = rows.finish();
        let mut want = vec![b'd', 0, 0, 0, 0];
        want.extend_from_slice(&4i16.to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 2, b'a', b'b']);
        want.extend_from_slice(&[0, 0, 0, 4]);
        want.extend_from_slice(&(i32::MIN + 1).to_be_bytes());
        want.extend_from_slice(&(-1i32).to_be_bytes());
        want.extend_from_slice(&(-1i32).to_be_bytes());
        want.extend_from_slice(&1i16.to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 8]);
        want.extend_from_slice(&(-1.5f64).to_be_bytes());
        let length = (want.len() - 1) as i32;
        want[1..5].copy_from_slice(&length.to_be_bytes());
        assert_eq!(m.wire(), want);
        assert_eq!(m.rows(), 2);
        assert_eq!(m.rows_bytes(), &want[5..]);
    }
}
