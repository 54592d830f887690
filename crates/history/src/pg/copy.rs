//! `COPY ... FROM STDIN`: the exchange with the server.

use super::{err, error_text, Client, PgError};
use postgres_protocol::message::{backend, frontend};

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
