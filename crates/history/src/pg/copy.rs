//! `COPY ... FROM STDIN`: the exchange with the server, and the rows sent either from one
//! payload or as CopyData messages already written where the rows were made.

use super::{err, error_text, Client, PgError};
use crate::copy::CopyMessage;
use postgres_protocol::message::{backend, frontend};
use std::io::{IoSlice, Write as _};

/// The binary format's header as one CopyData message: the signature, no flags, no header
/// extension (23 bytes after the tag, counting the length itself).
const HEADER: &[u8] = b"d\x00\x00\x00\x17PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00";

/// The binary format's trailer (a field count of -1) as one CopyData message, then CopyDone.
const TRAILER: &[u8] = b"d\x00\x00\x00\x06\xff\xffc\x00\x00\x00\x04";

/// At most this many buffers are handed to one `writev` (Linux's IOV_MAX).
const IOV_MAX: usize = 1024;

impl Client {
    /// Runs `sql`, a `COPY ... FROM STDIN`, sending `data` as its input (in whatever format
    /// `sql` names); returns the rows copied. Inside the transaction begun, if any.
    pub fn copy_in(&mut self, sql: &str, data: &[u8]) -> Result<u64, PgError> {
        self.start_copy(sql)?;
        // In pieces of 1 MiB: each is one message, written out once 8 MiB are waiting.
        for piece in data.chunks(1 << 20) {
            frontend::CopyData::new(piece)
                .map_err(|e| self.io(e))?
                .write(&mut self.output);
            if self.output.len() >= 8 << 20 {
                self.send()?;
            }
        }
        frontend::copy_done(&mut self.output);
        self.send()?;
        self.end_copy()
    }

    /// Runs `sql`, a `COPY ... FROM STDIN (FORMAT binary)`, its rows given as the CopyData
    /// messages they were written as: the format's header, `rows` and its trailer go to the
    /// socket from where they are, up to [`IOV_MAX`] buffers a system call, none copied into
    /// the connection's own buffer. Returns the rows copied.
    pub(crate) fn copy_in_rows(
        &mut self,
        sql: &str,
        rows: &[&CopyMessage],
    ) -> Result<u64, PgError> {
        self.start_copy(sql)?;
        let mut parts: Vec<&[u8]> = Vec::with_capacity(IOV_MAX.min(rows.len() + 2));
        parts.push(HEADER);
        for m in rows {
            if parts.len() == IOV_MAX {
                self.write_parts(&parts)?;
                parts.clear();
            }
            parts.push(m.wire());
        }
        parts.push(TRAILER);
        self.write_parts(&parts)?;
        self.stream.flush().map_err(|e| self.io(e))?;
        self.end_copy()
    }

    /// Writes every byte of `parts`, in order, with as few system calls as the socket takes.
    fn write_parts(&mut self, parts: &[&[u8]]) -> Result<(), PgError> {
        let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
        let mut rest = &mut slices[..];
        IoSlice::advance_slices(&mut rest, 0);
        while !rest.is_empty() {
            match self.stream.write_vectored(rest) {
                Ok(0) => {
                    return Err(self.io(std::io::Error::new(
                        std::io::ErrorKind::WriteZero,
                        "the connection took no more bytes",
                    )))
                }
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(())
    }

    /// Sends the COPY statement and waits until the server takes its input.
    fn start_copy(&mut self, sql: &str) -> Result<(), PgError> {
        frontend::query(sql, &mut self.output).map_err(|e| self.io(e))?;
        self.send()?;
        let mut failure = None;
        loop {
            match self.receive()? {
                backend::Message::CopyInResponse(_) => return Ok(()),
                backend::Message::ErrorResponse(body) => failure = Some(error_text(&body)),
                backend::Message::ReadyForQuery(_) => {
                    let why = failure.unwrap_or_else(|| "the server did not start the copy".into());
                    return Err(err(format!("{}: {why}", self.shown)));
                }
                _ => {}
            }
        }
    }

    /// After CopyDone: the server's answer, the rows copied or why not.
    fn end_copy(&mut self) -> Result<u64, PgError> {
        let mut failure = None;
        let mut copied = 0;
        loop {
            match self.receive()? {
                backend::Message::CommandComplete(body) => {
                    copied = body
                        .tag()
                        .unwrap_or_default()
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                }
                backend::Message::ErrorResponse(body) => failure = Some(error_text(&body)),
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match failure {
            Some(why) => Err(err(format!("{}: {why}", self.shown))),
            None => Ok(copied),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_and_trailer_are_whole_messages() {
        let mut header = bytes::BytesMut::new();
        let mut sig = b"PGCOPY\n\xff\r\n\0".to_vec();
        sig.extend_from_slice(&[0; 8]);
        frontend::CopyData::new(&sig[..])
            .unwrap()
            .write(&mut header);
        assert_eq!(&header[..], HEADER);
        let mut trailer = bytes::BytesMut::new();
        frontend::CopyData::new(&(-1i16).to_be_bytes()[..])
            .unwrap()
            .write(&mut trailer);
        frontend::copy_done(&mut trailer);
        assert_eq!(&trailer[..], TRAILER);
    }
}
