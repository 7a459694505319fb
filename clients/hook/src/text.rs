//! Cutting text the way the server counts it.

/// The longest prefix of `text` that is at most `max_units` UTF-16 code units, ending on a
/// character boundary (a surrogate pair is never split).
pub fn cut_utf16(text: &str, max_units: usize) -> &str {
    let mut units = 0;
    for (index, character) in text.char_indices() {
        units += character.len_utf16();
        if units > max_units {
            return &text[..index];
        }
    }
    text
}

/// Prose as the server accepts it: control characters other than tab and newline are
/// dropped (a `\r\n` becomes `\n`), so a transcript's stray escape never costs a heartbeat.
pub fn printable_prose(text: &str) -> std::borrow::Cow<'_, str> {
    let refused = |character: char| character.is_control() && !matches!(character, '\t' | '\n');
    if !text.chars().any(refused) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .filter(|character| !refused(*character))
            .collect(),
    )
}

/// The longest prefix of `text` that is at most `max_chars` characters.
pub fn cut_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_cut_table() {
        let table = [
            ("abc", 2, "ab"),
            ("abc", 3, "abc"),
            ("abc", 10, "abc"),
            // 😀 is two UTF-16 units: never split.
            ("a😀b", 2, "a"),
            ("a😀b", 3, "a😀"),
            ("ééé", 2, "éé"),
            ("", 5, ""),
        ];
        for (text, max, expected) in table {
            assert_eq!(cut_utf16(text, max), expected, "{text} {max}");
        }
        let long = "😀".repeat(2001);
        assert_eq!(cut_utf16(&long, 4000).encode_utf16().count(), 4000);
    }

    #[test]
    fn prose_keeps_tab_and_newline_and_drops_other_controls() {
        let table = [
            ("plain", "plain"),
            ("a\r\nb", "a\nb"),
            ("tab\there", "tab\there"),
            ("esc\u{1b}[31mred", "esc[31mred"),
            ("nul\u{0}", "nul"),
            ("c1\u{85}", "c1"),
            ("\u{202e}bidi", "\u{202e}bidi"),
        ];
        for (text, expected) in table {
            assert_eq!(printable_prose(text), expected, "{text:?}");
        }
    }

    #[test]
    fn char_cut() {
        assert_eq!(cut_chars("héllo", 2), "hé");
        assert_eq!(cut_chars("hé", 5), "hé");
    }
}
