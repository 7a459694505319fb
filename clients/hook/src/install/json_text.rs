//! A span scanner for JSON text: where each value, member and element sits, in bytes.
//!
//! Install edits settings files by inserting and removing text, never by re-serializing, so
//! every byte Baton did not add stays as the person (or another tool) wrote it. The scanner
//! only finds boundaries; the caller validates the whole file with `serde_json` first, so the
//! errors here are a second line of defence, not the user-facing diagnosis.

/// A half-open byte range `start..end` of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    Literal,
}

/// One JSON value: its kind and the bytes from its first to its last character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    pub span: Span,
}

impl Node {
    /// The bytes between the brackets of an object or array.
    pub fn inner(self) -> Span {
        Span {
            start: self.span.start + 1,
            end: self.span.end - 1,
        }
    }
}

/// One member of an object: `span` runs from the key's opening quote to the value's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    pub span: Span,
    /// The key's quoted text, kept to read the file's colon style.
    pub key_span: Span,
    pub value: Node,
}

/// Where the text stops being JSON the scanner can follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    pub offset: usize,
    pub detail: &'static str,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{} at byte {}", self.detail, self.offset)
    }
}

/// The top-level value, skipping surrounding whitespace.
pub fn root(text: &str) -> Result<Node, ScanError> {
    let mut cursor = Cursor::new(text, 0);
    let node = cursor.value()?;
    cursor.skip_whitespace();
    if cursor.position != text.len() {
        return Err(cursor.error("text after the top-level value"));
    }
    Ok(node)
}

/// The members of `object`, in text order.
pub fn members(text: &str, object: Node) -> Result<Vec<Member>, ScanError> {
    let mut cursor = Cursor::new(text, object.span.start);
    cursor.expect(b'{')?;
    let mut found = Vec::new();
    cursor.skip_whitespace();
    if cursor.eat(b'}') {
        return Ok(found);
    }
    loop {
        cursor.skip_whitespace();
        let key_node = cursor.value()?;
        if key_node.kind != Kind::String {
            return Err(cursor.error("object key is not a string"));
        }
        let key_text = &text[key_node.span.start..key_node.span.end];
        let key: String = serde_json::from_str(key_text)
            .map_err(|_| cursor.error("object key is not a valid string"))?;
        cursor.skip_whitespace();
        cursor.expect(b':')?;
        let value = cursor.value()?;
        found.push(Member {
            key,
            span: Span {
                start: key_node.span.start,
                end: value.span.end,
            },
            key_span: key_node.span,
            value,
        });
        cursor.skip_whitespace();
        if cursor.eat(b'}') {
            return Ok(found);
        }
        cursor.expect(b',')?;
    }
}

/// The elements of `array`, in text order.
pub fn elements(text: &str, array: Node) -> Result<Vec<Node>, ScanError> {
    let mut cursor = Cursor::new(text, array.span.start);
    cursor.expect(b'[')?;
    let mut found = Vec::new();
    cursor.skip_whitespace();
    if cursor.eat(b']') {
        return Ok(found);
    }
    loop {
        found.push(cursor.value()?);
        cursor.skip_whitespace();
        if cursor.eat(b']') {
            return Ok(found);
        }
        cursor.expect(b',')?;
    }
}

/// True when an object or array holds nothing but whitespace.
pub fn is_empty_container(text: &str, node: Node) -> bool {
    matches!(node.kind, Kind::Object | Kind::Array)
        && text[node.inner().start..node.inner().end]
            .bytes()
            .all(is_whitespace)
}

pub fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

struct Cursor<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str, position: usize) -> Self {
        Cursor {
            bytes: text.as_bytes(),
            position,
        }
    }

    fn error(&self, detail: &'static str) -> ScanError {
        ScanError {
            offset: self.position,
            detail,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.position += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, byte: u8) -> Result<(), ScanError> {
        if self.eat(byte) {
            return Ok(());
        }
        Err(self.error("unexpected character"))
    }

    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(is_whitespace) {
            self.position += 1;
        }
    }

    /// Scans one value of any kind, nested containers included, and reports its span.
    fn value(&mut self) -> Result<Node, ScanError> {
        self.skip_whitespace();
        let start = self.position;
        let kind = match self.peek() {
            Some(b'{') => {
                self.container(b'{', b'}')?;
                Kind::Object
            }
            Some(b'[') => {
                self.container(b'[', b']')?;
                Kind::Array
            }
            Some(b'"') => {
                self.string()?;
                Kind::String
            }
            Some(b'-' | b'0'..=b'9') => {
                self.run(|byte| matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'));
                Kind::Number
            }
            Some(b't' | b'f' | b'n') => {
                self.run(|byte| byte.is_ascii_lowercase());
                let word = &self.bytes[start..self.position];
                if !matches!(word, b"true" | b"false" | b"null") {
                    return Err(self.error("unknown literal"));
                }
                Kind::Literal
            }
            _ => return Err(self.error("expected a value")),
        };
        let span = Span {
            start,
            end: self.position,
        };
        Ok(Node { kind, span })
    }

    fn run(&mut self, accept: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&accept) {
            self.position += 1;
        }
    }

    /// Skips a string, honouring backslash escapes. Multi-byte UTF-8 never contains `"` or `\`,
    /// so a byte walk is exact.
    fn string(&mut self) -> Result<(), ScanError> {
        self.expect(b'"')?;
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.position += 1;
                    return Ok(());
                }
                Some(b'\\') => self.position += 2,
                Some(_) => self.position += 1,
            }
        }
    }

    fn container(&mut self, open: u8, close: u8) -> Result<(), ScanError> {
        self.expect(open)?;
        self.skip_whitespace();
        if self.eat(close) {
            return Ok(());
        }
        loop {
            if open == b'{' {
                self.skip_whitespace();
                self.string()?;
                self.skip_whitespace();
                self.expect(b':')?;
            }
            self.value()?;
            self.skip_whitespace();
            if self.eat(close) {
                return Ok(());
            }
            self.expect(b',')?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(text: &str, span: Span) -> &str {
        &text[span.start..span.end]
    }

    #[test]
    fn members_report_key_and_value_spans() {
        let text = r#" { "a" : 1 , "b\"}" : {"x": [1, "]"]}, "c": null } "#;
        let root_node = root(text).unwrap();
        assert_eq!(root_node.kind, Kind::Object);
        let found = members(text, root_node).unwrap();
        let keys: Vec<&str> = found.iter().map(|member| member.key.as_str()).collect();
        assert_eq!(keys, ["a", "b\"}", "c"]);
        assert_eq!(slice(text, found[0].span), r#""a" : 1"#);
        assert_eq!(slice(text, found[1].value.span), r#"{"x": [1, "]"]}"#);
        assert_eq!(found[1].value.kind, Kind::Object);
        assert_eq!(found[2].value.kind, Kind::Literal);
    }

    #[test]
    fn strings_with_escapes_and_brackets_stay_whole() {
        let text = r#"["a\\", "b\"]", "{not an object}", "\u00e9\\\""]"#;
        let found = elements(text, root(text).unwrap()).unwrap();
        let texts: Vec<&str> = found.iter().map(|node| slice(text, node.span)).collect();
        assert_eq!(
            texts,
            [
                r#""a\\""#,
                r#""b\"]""#,
                r#""{not an object}""#,
                r#""\u00e9\\\"""#
            ]
        );
    }

    #[test]
    fn nested_arrays_and_numbers() {
        let text = "[[1,[2,[3]]],-1.5e+3,[],{}]";
        let found = elements(text, root(text).unwrap()).unwrap();
        let kinds: Vec<Kind> = found.iter().map(|node| node.kind).collect();
        assert_eq!(
            kinds,
            [Kind::Array, Kind::Number, Kind::Array, Kind::Object]
        );
        assert_eq!(slice(text, found[0].span), "[1,[2,[3]]]");
        assert_eq!(slice(text, found[1].span), "-1.5e+3");
        assert!(is_empty_container(text, found[2]));
        assert!(is_empty_container(text, found[3]));
    }

    #[test]
    fn unicode_keys_and_values_keep_byte_offsets() {
        let text = "{\"clé\": \"naïve ✓\", \"𝄞\": [\"ß\"]}";
        let found = members(text, root(text).unwrap()).unwrap();
        assert_eq!(found[0].key, "clé");
        assert_eq!(slice(text, found[0].value.span), "\"naïve ✓\"");
        assert_eq!(found[1].key, "𝄞");
        assert_eq!(slice(text, found[1].span), "\"𝄞\": [\"ß\"]");
    }

    #[test]
    fn escaped_keys_are_decoded() {
        let text = r#"{"ho\u006fks": {}}"#;
        let found = members(text, root(text).unwrap()).unwrap();
        assert_eq!(found[0].key, "hooks");
    }

    #[test]
    fn whitespace_only_containers_are_empty() {
        let text = "{ \r\n\t }";
        assert!(is_empty_container(text, root(text).unwrap()));
        assert!(members(text, root(text).unwrap()).unwrap().is_empty());
    }

    #[test]
    fn broken_text_is_an_error() {
        for text in ["{", "[1,]x", "\"open", "{\"a\" 1}", "[tru]", "{} {}"] {
            let outcome = root(text).and_then(|node| match node.kind {
                Kind::Object => members(text, node).map(|_| ()),
                Kind::Array => elements(text, node).map(|_| ()),
                _ => Ok(()),
            });
            assert!(outcome.is_err(), "{text:?} should not scan");
        }
    }
}
