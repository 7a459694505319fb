//! Splitting a byte buffer into complete transcript lines. Only lines ending in `\n` are
//! handed on: a writer may be mid-line, and the unfinished tail is read again next time.
//! (0x0A never occurs inside a multi-byte UTF-8 sequence, so a cut at a newline is safe.)

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

#[cfg(test)]
mod tests {
    use super::*;

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
