//! How a settings file is laid out, and how to write new JSON that looks like it belongs there.
//!
//! Baton's inserted text copies the file's newline style, indentation unit and colon spacing,
//! so a hand-formatted file stays hand-formatted-looking. A one-line file gets one-line text;
//! an empty object (`{}`) or a new file is written pretty-printed with two spaces, because
//! there is no style to copy and a person will read the result.

use serde_json::Value;

use super::json_text::{Member, Node};

/// The formatting conventions read from one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub newline: &'static str,
    /// One level of indentation: two or four spaces, a tab, whatever the file uses.
    pub unit: String,
    /// The text between a key and its value, such as `": "` or `":"`.
    pub colon: String,
    /// True for a file whose top-level object sits on one line.
    pub compact: bool,
}

impl Layout {
    /// Reads the conventions from the text and its parsed root object.
    pub fn detect(text: &str, root: Node, root_members: &[Member]) -> Layout {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let inner = &text[root.inner().start..root.inner().end];
        let compact = !root_members.is_empty() && !inner.contains('\n');
        let default_colon = if compact { ":" } else { ": " };
        let colon = root_members
            .first()
            .map(|member| &text[member.key_span.end..member.value.span.start])
            .filter(|between| between.bytes().all(|byte| byte == b':' || byte == b' '))
            .unwrap_or(default_colon)
            .to_string();
        Layout {
            newline,
            unit: indentation_unit(text),
            colon,
            compact,
        }
    }

    /// Renders `value` pretty (one item a line, children `indent` plus one unit) or compact.
    pub fn render(&self, value: &Value, pretty: bool, indent: &str) -> String {
        let mut out = String::new();
        self.write(&mut out, value, pretty, indent);
        out
    }

    /// Renders `"key": value`, the value laid out as by [`Layout::render`].
    pub fn render_member(&self, key: &str, value: &Value, pretty: bool, indent: &str) -> String {
        let mut out = Value::String(key.to_string()).to_string();
        out.push_str(&self.colon);
        self.write(&mut out, value, pretty, indent);
        out
    }

    fn write(&self, out: &mut String, value: &Value, pretty: bool, indent: &str) {
        let child_indent = format!("{indent}{}", self.unit);
        let (open, close) = match value {
            Value::Object(map) if !map.is_empty() => ('{', '}'),
            Value::Array(items) if !items.is_empty() => ('[', ']'),
            scalar_or_empty => {
                out.push_str(&scalar_or_empty.to_string());
                return;
            }
        };
        out.push(open);
        let mut first = true;
        let mut separate = |out: &mut String| {
            if !first {
                out.push(',');
                if !pretty && self.colon.ends_with(' ') {
                    out.push(' ');
                }
            }
            first = false;
            if pretty {
                out.push_str(self.newline);
                out.push_str(&child_indent);
            }
        };
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    separate(out);
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push_str(&self.colon);
                    self.write(out, child, pretty, &child_indent);
                }
            }
            Value::Array(items) => {
                for child in items {
                    separate(out);
                    self.write(out, child, pretty, &child_indent);
                }
            }
            _ => {}
        }
        if pretty {
            out.push_str(self.newline);
            out.push_str(indent);
        }
        out.push(close);
    }
}

/// The leading spaces and tabs of the line holding `position`.
pub fn line_indent(text: &str, position: usize) -> &str {
    let line_start = text[..position].rfind('\n').map_or(0, |index| index + 1);
    let line = &text[line_start..];
    let width = line
        .bytes()
        .take_while(|byte| *byte == b' ' || *byte == b'\t')
        .count();
    &line[..width]
}

/// The shallowest indentation of any line: in a pretty-printed file that is one level.
/// JSON strings cannot hold raw line breaks, so every line start is structural.
fn indentation_unit(text: &str) -> String {
    text.split('\n')
        .filter_map(|line| {
            let line = line.trim_end_matches('\r');
            let width = line
                .bytes()
                .take_while(|byte| *byte == b' ' || *byte == b'\t')
                .count();
            (width > 0 && width < line.len()).then(|| line[..width].to_string())
        })
        .min_by_key(String::len)
        .unwrap_or_else(|| "  ".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::json_text;
    use serde_json::json;

    fn layout_of(text: &str) -> Layout {
        let root = json_text::root(text).unwrap();
        let members = json_text::members(text, root).unwrap();
        Layout::detect(text, root, &members)
    }

    #[test]
    fn detection_table() {
        let table = [
            ("{\n  \"a\": 1\n}\n", "\n", "  ", ": ", false),
            (
                "{\n    \"a\": {\n        \"b\": 1\n    }\n}",
                "\n",
                "    ",
                ": ",
                false,
            ),
            ("{\r\n\t\"a\": 1\r\n}\r\n", "\r\n", "\t", ": ", false),
            ("{\"a\":1,\"b\":2}", "\n", "  ", ":", true),
            ("{\"a\" : 1}", "\n", "  ", " : ", true),
            ("{}", "\n", "  ", ": ", false),
            ("{ }\n", "\n", "  ", ": ", false),
        ];
        for (text, newline, unit, colon, compact) in table {
            let found = layout_of(text);
            assert_eq!(found.newline, newline, "{text:?}");
            assert_eq!(found.unit, unit, "{text:?}");
            assert_eq!(found.colon, colon, "{text:?}");
            assert_eq!(found.compact, compact, "{text:?}");
        }
    }

    #[test]
    fn renders_pretty_with_the_file_conventions() {
        let layout = layout_of("{\r\n\t\"a\": 1\r\n}");
        let value = json!({"x": [{"y": 1}], "z": {}});
        let text = layout.render(&value, true, "\t");
        assert_eq!(
            text,
            "{\r\n\t\t\"x\": [\r\n\t\t\t{\r\n\t\t\t\t\"y\": 1\r\n\t\t\t}\r\n\t\t],\r\n\t\t\"z\": {}\r\n\t}"
        );
    }

    #[test]
    fn renders_compact_with_the_file_spacing() {
        let tight = layout_of("{\"a\":1}");
        let spaced = layout_of("{\"a\": 1}");
        let value = json!({"x": [1, "two"], "y": null});
        assert_eq!(
            tight.render(&value, false, ""),
            r#"{"x":[1,"two"],"y":null}"#
        );
        assert_eq!(
            spaced.render(&value, false, ""),
            r#"{"x": [1, "two"], "y": null}"#
        );
        assert_eq!(
            spaced.render_member("k", &json!([]), false, ""),
            r#""k": []"#
        );
    }

    #[test]
    fn line_indent_reads_the_line_prefix() {
        let text = "{\n    \"a\": [\n\t\t1\n    ]\n}";
        assert_eq!(line_indent(text, text.find("\"a\"").unwrap()), "    ");
        assert_eq!(line_indent(text, text.find('[').unwrap()), "    ");
        assert_eq!(line_indent(text, text.find('1').unwrap()), "\t\t");
        assert_eq!(line_indent(text, 0), "");
    }
}
