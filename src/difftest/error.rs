//! The differential tester's one error type.

use std::fmt;
use std::path::PathBuf;

use crate::engine::EngineError;

/// Why the differential tester could not do something.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DifftestError {
    /// A bad option value (from the command line or an embedder).
    InvalidOption {
        /// The option (`--max-len`).
        option: &'static str,
        /// What is wrong with its value.
        message: String,
    },
    /// A generated program has no encoding (a generator bug).
    Encode(String),
    /// A program picasso syntax cannot express.
    Unrepresentable(String),
    /// An engine could not prepare a program.
    Engine(EngineError),
    /// A reproducer does not read back as what was tested (a bug in the writer).
    Reproducer(String),
    /// A fuzz input found something: the engines disagree, or a check failed.
    Finding(String),
    /// A file could not be written.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The system's message.
        message: String,
    },
}

impl fmt::Display for DifftestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DifftestError::InvalidOption { option, message } => write!(f, "{option}: {message}"),
            DifftestError::Encode(message) => {
                write!(f, "a generated program cannot be encoded: {message}")
            }
            DifftestError::Unrepresentable(message) => {
                write!(f, "no picasso source expresses the program: {message}")
            }
            DifftestError::Engine(e) => e.fmt(f),
            DifftestError::Reproducer(message) => write!(f, "bad reproducer: {message}"),
            DifftestError::Finding(message) => f.write_str(message),
            DifftestError::Io { path, message } => {
                write!(f, "{}: cannot write: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for DifftestError {}
