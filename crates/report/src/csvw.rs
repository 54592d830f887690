//! The one CSV writer: every CSV oscost writes (`--csv`, `compare --csv`, `fleet --csv`,
//! `history list --csv`, the series of `--series DIR`) goes through [`CsvWriter`], so that a
//! field a spreadsheet or script reads back is quoted by one rule wherever it came from.
//!
//! The rule (RFC 4180's): fields are separated by `,` and rows end in `\n`; a field is quoted
//! only when it must be, that is when it holds a `,`, a `"`, a `\r` or a `\n` (or is the lone
//! empty field of a row), and a `"` inside a quoted field is doubled. Every row has the
//! header's width: a row of another width is an error, not a shifted column.

/// A CSV document written in memory: its header, then its rows.
pub struct CsvWriter(csv::Writer<Vec<u8>>);

impl CsvWriter {
    /// A document whose first row is `header`, the columns' names.
    pub fn new<I, T>(header: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        // The crate's defaults spelled out, so that the rule above is here to read and a
        // change of defaults upstream cannot change a byte of the output.
        let mut w = csv::WriterBuilder::new()
            .delimiter(b',')
            .terminator(csv::Terminator::Any(b'\n'))
            .quote_style(csv::QuoteStyle::Necessary)
            .quote(b'"')
            .double_quote(true)
            .flexible(false)
            .from_writer(Vec::new());
        w.write_record(header)?;
        Ok(Self(w))
    }

    /// Appends one row, its fields in the header's order.
    pub fn row<I, T>(&mut self, fields: I) -> anyhow::Result<()>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.0.write_record(fields)?;
        Ok(())
    }

    /// The whole document as text.
    pub fn finish(self) -> anyhow::Result<String> {
        Ok(String::from_utf8(self.0.into_inner()?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        let mut w = CsvWriter::new(["id", "note"]).unwrap();
        w.row(["plain", ""]).unwrap();
        w.row(["a,b", "say \"hi\""]).unwrap();
        w.row(["two\nlines", "cr\rhere"]).unwrap();
        assert_eq!(
            w.finish().unwrap(),
            "id,note\nplain,\n\"a,b\",\"say \"\"hi\"\"\"\n\"two\nlines\",\"cr\rhere\"\n"
        );
    }

    #[test]
    fn a_row_of_another_width_is_an_error() {
        let mut w = CsvWriter::new(["a", "b"]).unwrap();
        assert!(w.row(["only one"]).is_err());
    }
}
