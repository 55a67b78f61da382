//! Escaping for the three languages frame names end up in: XML (SVG), HTML and
//! JSON embedded in a `<script>` element.

use std::borrow::Cow;
use std::fmt::Write;

/// Escapes text for XML and HTML content and attribute values.
///
/// Characters XML 1.0 cannot hold at all, even as references (most control
/// characters), become U+FFFD so the document stays well-formed.
pub fn escape_xml(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_xml_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    Cow::Owned(out)
}

fn needs_xml_escape(c: char) -> bool {
    matches!(c, '&' | '<' | '>' | '"' | '\'') || !is_xml_char(c)
}

/// The XML 1.0 `Char` production.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Makes JSON text safe inside an HTML `<script>` element.
///
/// `<`, `>` and `&` can only occur inside JSON strings, where `\u003c` and
/// friends mean the same; with them gone no `</script>` or `<!--` can end the
/// element early. U+2028 and U+2029 are escaped for older JavaScript parsers.
pub fn json_for_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Shortens `text` to at most `max_chars` characters, ending in `..` when cut.
/// Counts characters, not bytes, so multi-byte names are never split mid-character.
pub(crate) fn truncate_label(text: &str, max_chars: usize) -> Option<Cow<'_, str>> {
    if text.chars().count() <= max_chars {
        return Some(Cow::Borrowed(text));
    }
    // Fewer than three characters of name plus ".." tell the reader nothing.
    if max_chars < 5 {
        return None;
    }
    let kept: String = text.chars().take(max_chars - 2).collect();
    Some(Cow::Owned(kept + ".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_replaces_illegal_characters() {
        assert_eq!(escape_xml("plain"), "plain");
        assert_eq!(escape_xml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(escape_xml("bell\u{7}here"), "bell\u{FFFD}here");
        assert_eq!(escape_xml("tab\tok"), "tab\tok");
        assert_eq!(escape_xml("π→😀"), "π→😀");
    }

    #[test]
    fn script_json_cannot_close_the_element() {
        let json = serde_json::to_string("</script><!-- & \u{2028}").unwrap();
        let safe = json_for_script(&json);
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'));
        let back: String = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, "</script><!-- & \u{2028}");
    }

    #[test]
    fn labels_are_cut_by_characters() {
        assert_eq!(truncate_label("short", 10).unwrap(), "short");
        assert_eq!(truncate_label("ääääääää", 6).unwrap(), "ääää..");
        assert_eq!(truncate_label("long name", 4), None);
    }
}
