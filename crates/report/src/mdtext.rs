//! Text made safe for a Markdown table: every Markdown oscost writes (`--markdown`,
//! `compare --markdown`, `fleet --markdown`) escapes its cells and lines with [`cell`], so that
//! a case id, note or environment field read from a result file cannot end a cell early or
//! break its table, whichever renderer it passes through.

/// `text` as one Markdown table cell, or one line beside the tables (compare's paragraphs): a
/// `|` escaped as `\|`, which would otherwise end the cell, and a newline made a space, which
/// would otherwise end the row and with it the table.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_are_escaped_and_newlines_are_spaces() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
