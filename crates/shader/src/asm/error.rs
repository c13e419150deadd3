//! Assembler diagnostics: every one names the file, line and column.

use std::fmt;

/// Where in the sources a diagnostic points.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Location {
    /// The file name (as given, or as set by a `#line` directive).
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column of the offending text (1 when the whole line is meant).
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = super::text::escape(&self.file);
        write!(f, "{file}:{}:{}", self.line, self.column)
    }
}

/// An error that stops assembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    /// Where.
    pub location: Location,
    /// What is wrong, as a sentence fragment (`invalid source2 register: c4`).
    pub message: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: error: {}", self.location, self.message)
    }
}

impl std::error::Error for AsmError {}

/// A warning: assembly goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmWarning {
    /// Where.
    pub location: Location,
    /// What is suspicious.
    pub message: String,
}

impl fmt::Display for AsmWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: warning: {}", self.location, self.message)
    }
}
