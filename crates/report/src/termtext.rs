//! Text from result files made safe to print on a terminal: a file (hand-edited, or from
//! another machine) can carry escape sequences that move the cursor, retitle the window or
//! hide text, and bidirectional overrides that show text in another order than it has.

/// `text` with every control character but newline and tab, and every bidirectional control,
/// shown as an escape (`\x1b`, `\u{202e}`) instead of being sent to the terminal.
pub fn for_terminal(text: &str) -> String {
    if !text.chars().any(unsafe_char) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    out
}

/// [`for_terminal`] for a one-line message (an error quoting a case id from a file): newlines
/// and tabs are shown as escapes too (`\x0a`), so text from a file never splits the line.
pub fn one_line(text: &str) -> String {
    let safe = for_terminal(text);
    if !safe.contains(['\n', '\t']) {
        return safe;
    }
    safe.replace('\n', "\\x0a").replace('\t', "\\x09")
}

fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bidi_controls_are_shown_not_sent() {
        assert_eq!(for_terminal("plain │ table\n\tok"), "plain │ table\n\tok");
        assert_eq!(
            for_terminal("cpu\u{1b}]0;pwned\u{7}x"),
            "cpu\\x1b]0;pwned\\x07x"
        );
        assert_eq!(for_terminal("a\u{202e}b\rc"), "a\\u{202e}b\\x0dc");
        assert_eq!(for_terminal("\u{9b}31m"), "\\u{9b}31m");
    }

    #[test]
    fn one_line_shows_newlines_and_tabs_as_escapes() {
        assert_eq!(one_line("plain line"), "plain line");
        assert_eq!(
            one_line("case `evil\nid\u{1b}[2J`\tx"),
            "case `evil\\x0aid\\x1b[2J`\\x09x"
        );
    }
}
