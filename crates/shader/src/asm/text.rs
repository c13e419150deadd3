//! Splitting source lines the way picasso does, keeping the column of every piece.

/// A piece of a source line and the 1-based column where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span<'a> {
    /// The text.
    pub text: &'a str,
    /// Its 1-based column in the line.
    pub column: usize,
}

impl<'a> Span<'a> {
    /// A whole line.
    pub fn line(text: &'a str) -> Span<'a> {
        Span { text, column: 1 }
    }

    /// Without leading and trailing whitespace.
    pub fn trim(self) -> Span<'a> {
        let start = self.text.len() - self.text.trim_start().len();
        Span {
            text: self.text.trim(),
            column: self.column + start,
        }
    }

    /// The sub-span `text[start..end]`.
    pub fn slice(self, start: usize, end: usize) -> Span<'a> {
        Span {
            text: &self.text[start..end],
            column: self.column + start,
        }
    }

    /// The sub-span from `start` to the end.
    pub fn from(self, start: usize) -> Span<'a> {
        self.slice(start, self.text.len())
    }

    /// Whether the text is empty.
    pub fn is_empty(self) -> bool {
        self.text.is_empty()
    }
}

/// How many characters of user text a message quotes before cutting it off with `…`.
pub const EXCERPT_CHARS: usize = 40;

/// Whether `c` must not reach a terminal or a one-line message raw: control characters (a
/// newline, an escape sequence's ESC), line and paragraph separators and bidirectional overrides.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32).unwrap(),
        c => write!(out, "\\u{{{:x}}}", c as u32).unwrap(),
    }
}

/// Text from a file (a symbol name, a source line) made safe to print: control characters and
/// the like become escapes (`\n`, `\x1b`, `\u{202e}`); everything else is unchanged.
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// User text as an error or warning quotes it: [`escape`]d and cut to its first
/// [`EXCERPT_CHARS`] characters, followed by `…` when it was longer.
pub fn excerpt(text: &str) -> String {
    excerpt_chars(text, EXCERPT_CHARS)
}

/// [`excerpt`] with a limit of `max` characters.
pub fn excerpt_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => escape(text).into_owned(),
        Some((end, _)) => format!("{}…", escape(&text[..end])),
    }
}

impl std::fmt::Display for Span<'_> {
    /// The text as a message quotes it ([`excerpt`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&excerpt(self.text))
    }
}

/// The arguments after a command, consumed piece by piece.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    rest: Span<'a>,
}

impl<'a> Args<'a> {
    /// The arguments in `rest`.
    pub fn new(rest: Span<'a>) -> Args<'a> {
        Args { rest }
    }

    /// The text up to the next character in `delims` (which is skipped), or `None` when nothing
    /// is left. An empty piece between two delimiters is an empty span, not `None`.
    fn until(&mut self, delims: &[char]) -> Option<Span<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let text = self.rest.text;
        match text.find(delims) {
            Some(end) => {
                let piece = self.rest.slice(0, end);
                self.rest = self.rest.from(end + 1);
                Some(piece)
            }
            None => {
                let piece = self.rest;
                self.rest = self.rest.from(text.len());
                Some(piece)
            }
        }
    }

    /// The next comma-separated argument, trimmed.
    pub fn comma(&mut self) -> Option<Span<'a>> {
        self.until(&[',']).map(Span::trim)
    }

    /// The next space-separated argument, trimmed.
    pub fn space(&mut self) -> Option<Span<'a>> {
        let piece = self.until(&[' ', '\t'])?;
        self.rest = self.rest.trim();
        Some(piece.trim())
    }

    /// The text up to the next `(`, trimmed.
    pub fn paren(&mut self) -> Option<Span<'a>> {
        self.until(&['(']).map(Span::trim)
    }

    /// Everything not consumed yet.
    pub fn rest(&self) -> Span<'a> {
        self.rest
    }

    /// Whether nothing is left.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

/// Whether `id` is an identifier: letters, `_`, `$`, and digits after the first character.
pub fn is_identifier(id: &str) -> bool {
    id.char_indices().all(|(i, c)| {
        c.is_ascii_alphabetic() || c == '_' || c == '$' || (i > 0 && c.is_ascii_digit())
    })
}

/// Parses an integer the way C's `strtoll(text, _, 0)` reads a whole argument: optional sign,
/// `0x` hex, leading-`0` octal or decimal. Unlike C, trailing characters are an error (`None`).
pub fn parse_integer(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse::<i64>().ok()?
    };
    if digits.starts_with(['+', '-']) {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// C's `atoi`: optional whitespace and sign, then the longest run of decimal digits (0 if none).
pub fn atoi(text: &str) -> i64 {
    let text = text.trim_start();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let value = digits[..end].bytes().fold(0i64, |v, d| {
        v.wrapping_mul(10).wrapping_add((d - b'0') as i64)
    });
    if negative { -value } else { value }
}

/// C's `atof` on a whole argument: a decimal or hexadecimal floating-point number, `inf`,
/// `infinity` or `nan` (any case, optional sign). An `f` suffix is accepted; other trailing
/// characters are an error (`None`), where C would ignore them.
pub fn parse_float(text: &str) -> Option<f64> {
    let text = text.trim();
    parse_float_exact(text).or_else(|| {
        let stripped = text.strip_suffix(['f', 'F'])?;
        if stripped.starts_with(|c: char| c.is_ascii_digit() || ".-+".contains(c))
            && !stripped.to_ascii_lowercase().contains('x')
        {
            parse_float_exact(stripped)
        } else {
            None
        }
    })
}

fn parse_float_exact(text: &str) -> Option<f64> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let lower = body.to_ascii_lowercase();
    let value = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ if lower.starts_with("0x") => parse_hex_float(&lower[2..])?,
        _ => {
            if body.is_empty() || !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                return None;
            }
            body.parse::<f64>().ok()?
        }
    };
    Some(if negative { -value } else { value })
}

/// The digits of a C hexadecimal float after `0x`: `h.hhhp±d`.
fn parse_hex_float(text: &str) -> Option<f64> {
    let (mantissa, exponent) = match text.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int_part.chars().chain(frac_part.chars()) {
        value = value * 16.0 + c.to_digit(16)? as f64;
    }
    let scale = exponent - 4 * frac_part.len() as i32;
    Some(value * 2f64.powi(scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_like_picasso() {
        let mut args = Args::new(Span {
            text: "r0.xy,  c4[a0.x] ,v1",
            column: 5,
        });
        let first = args.comma().unwrap();
        assert_eq!((first.text, first.column), ("r0.xy", 5));
        let second = args.comma().unwrap();
        assert_eq!((second.text, second.column), ("c4[a0.x]", 13));
        assert_eq!(args.comma().unwrap().text, "v1");
        assert!(args.comma().is_none());
        let mut args = Args::new(Span::line("a,,b"));
        assert_eq!(args.comma().unwrap().text, "a");
        assert_eq!(args.comma().unwrap().text, "");
        let mut args = Args::new(Span::line("name   vec   o3"));
        assert_eq!(args.space().unwrap().text, "name");
        assert_eq!(args.space().unwrap().text, "vec");
        assert_eq!(args.space().unwrap().text, "o3");
        assert!(args.space().is_none());
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_integer("12"), Some(12));
        assert_eq!(parse_integer("0x1F"), Some(31));
        assert_eq!(parse_integer("010"), Some(8));
        assert_eq!(parse_integer("-3"), Some(-3));
        assert_eq!(parse_integer("3x"), None);
        assert_eq!(atoi(" 42abc"), 42);
        assert_eq!(atoi("aL"), 0);
        assert_eq!(parse_float("1.5"), Some(1.5));
        assert_eq!(parse_float("-2e3"), Some(-2000.0));
        assert_eq!(parse_float(".5f"), Some(0.5));
        assert_eq!(parse_float("0x1p-2"), Some(0.25));
        assert_eq!(parse_float("-inf"), Some(f64::NEG_INFINITY));
        assert!(parse_float("nan").unwrap().is_nan());
        assert_eq!(parse_float("one"), None);
        assert!(is_identifier("a$b_1"));
        assert!(!is_identifier("1a"));
        assert!(!is_identifier("a b"));
    }
    #[test]
    fn quoted_text_is_escaped_and_capped() {
        assert_eq!(escape("plain name"), "plain name");
        assert_eq!(escape("a\nb\x1b[31mc\u{202e}"), "a\\nb\\x1b[31mc\\u{202e}");
        let long = "x".repeat(10_000);
        let quoted = excerpt(&long);
        assert_eq!(quoted, format!("{}…", "x".repeat(EXCERPT_CHARS)));
        assert_eq!(
            excerpt(&"é".repeat(EXCERPT_CHARS)),
            "é".repeat(EXCERPT_CHARS)
        );
        assert_eq!(excerpt("\n"), "\\n");
    }
}
