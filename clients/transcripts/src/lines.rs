//! Splitting a byte buffer into complete transcript lines. Only lines ending in `\n` are
//! handed on: a writer may be mid-line, and the unfinished tail is read again next time.
//! (0x0A never occurs inside a multi-byte UTF-8 sequence, so a cut at a newline is safe.)
//!
//! A file's last bytes without a newline are a different case ([`final_line`]): copied,
//! archived and synced transcripts often end with a complete JSON line and no `\n` (HOOKS.md
//! 4.9), and that line is a real record. It counts when it parses as one whole JSON object; a
//! half-written one does not. Either way it is never taken as consumed, so a checkpoint does not
//! cache it until its newline arrives.

/// Calls `each` for every complete line of `bytes` (without its newline) and returns how many
/// bytes those lines took, newlines included.
pub fn complete_lines(bytes: &[u8], mut each: impl FnMut(&[u8])) -> usize {
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        let line = &bytes[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.iter().all(u8::is_ascii_whitespace) {
            each(line);
        }
        start = end + 1;
    }
    start
}

/// A cheap well-formedness check for lines the parser does not need to decode: a JSON
/// object's first and last bytes. It catches a line cut short and plain garbage.
pub fn looks_like_object(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii();
    trimmed.first() == Some(&b'{') && trimmed.last() == Some(&b'}')
}

/// The unterminated end of a file as a line to read, when it is one complete JSON object.
/// `None` for a half-written line (a writer is mid-line), garbage or only whitespace.
pub fn final_line(tail: &[u8]) -> Option<&[u8]> {
    let line = tail.strip_suffix(b"\r").unwrap_or(tail).trim_ascii();
    if !looks_like_object(line) {
        return None;
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(line)
        .is_ok()
        .then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_line_without_newline() {
        let cases: &[(&[u8], Option<&[u8]>)] = &[
            (b"{\"a\":1}", Some(b"{\"a\":1}")),
            (b"{\"a\":1}\r", Some(b"{\"a\":1}")),
            (b"  {\"a\":{\"b\":[1,2]}}  ", Some(b"{\"a\":{\"b\":[1,2]}}")),
            // Half-written: cut inside a string, inside a nested object, after a comma.
            (b"{\"a\":\"text", None),
            (b"{\"a\":{\"b\":1}", None),
            (b"{\"a\":1,", None),
            // Braces at both ends but not one object: two objects, or a cut that ends in `}`.
            (b"{\"a\":1}{\"b\":2}", None),
            (b"{\"a\":\"}", None),
            (b"", None),
            (b"   ", None),
            (b"[1,2]", None),
        ];
        for (tail, expected) in cases {
            assert_eq!(
                final_line(tail),
                *expected,
                "{}",
                String::from_utf8_lossy(tail)
            );
        }
    }

    #[test]
    fn unfinished_last_line_is_not_consumed() {
        let mut seen = Vec::new();
        let used = complete_lines(b"{\"a\":1}\n{\"b\":2}\n{\"c\"", |line| {
            seen.push(line.to_vec())
        });
        assert_eq!(seen, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
        assert_eq!(used, 16);
    }

    #[test]
    fn blank_lines_and_crlf_are_tolerated() {
        let mut seen = Vec::new();
        complete_lines(b"\n  \n{\"a\":1}\r\n", |line| seen.push(line.to_vec()));
        assert_eq!(seen, vec![b"{\"a\":1}".to_vec()]);
    }

    #[test]
    fn object_shape_check() {
        assert!(looks_like_object(b" {\"x\":1} "));
        assert!(!looks_like_object(b"{\"x\":"));
        assert!(!looks_like_object(b"garbage"));
    }
}
