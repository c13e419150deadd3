//! Why a command failed: one line on stderr (after `picajit: `) and exit status 2.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::asm::text::escape;
use crate::asm::{AsmError, Unrepresentable};
use crate::difftest::DifftestError;
use crate::document::input::InputError;
use crate::engine::EngineError;
use crate::program::{ProgramError, ShaderKind};
use crate::shbin::ShbinError;

/// What the command was doing with a file when the system refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoAction {
    /// Reading it.
    Read,
    /// Creating or truncating it.
    Create,
    /// Writing to it.
    Write,
    /// Creating a folder.
    CreateFolder,
}

impl IoAction {
    fn verb(self) -> &'static str {
        match self {
            IoAction::Read => "cannot read",
            IoAction::Create => "cannot create",
            IoAction::Write => "cannot write",
            IoAction::CreateFolder => "cannot create the folder",
        }
    }
}

/// A failure of a command. Its [`Display`](fmt::Display) is one line naming what and where;
/// names and text from files are escaped (no control characters reach the terminal).
#[derive(Debug)]
pub enum CliError {
    /// A file could not be read, created or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the command tried.
        action: IoAction,
        /// The system's error.
        error: io::Error,
    },
    /// Standard output could not be written (a closed pipe, a full disk).
    Stdout(io::Error),
    /// A text file (source, JSON) is not UTF-8.
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A SHBIN file is malformed.
    Shbin {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where in the file.
        error: ShbinError,
    },
    /// A DVLE's program does not fit program memory.
    Program {
        /// The SHBIN file.
        path: PathBuf,
        /// The DVLE.
        dvle: usize,
        /// Why.
        error: ProgramError,
    },
    /// `--dvle` names a DVLE the file does not have.
    NoSuchDvle {
        /// The SHBIN file.
        path: PathBuf,
        /// The DVLE asked for.
        index: usize,
        /// How many the file has.
        count: usize,
    },
    /// The run input file is malformed.
    Input {
        /// The JSON file.
        path: PathBuf,
        /// What is wrong, and where in the file.
        error: InputError,
    },
    /// The input file gives nothing to run (`bench` needs at least one vertex or invocation).
    NothingToRun {
        /// The JSON file.
        path: PathBuf,
        /// The DVLE's stage.
        kind: ShaderKind,
    },
    /// `bench`: a path gives nothing to measure.
    Bench {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A `picajit merge` input that is not a shard line of the same run as the others.
    Merge {
        /// The file (`-`: standard input).
        path: PathBuf,
        /// Which document, and why.
        why: String,
    },
    /// An option's value does not fit the other options or the file.
    InvalidOption {
        /// The option (`--output`).
        option: &'static str,
        /// Its value as given.
        value: String,
        /// Why it cannot be used.
        why: String,
    },
    /// An engine could not prepare the program.
    Engine(EngineError),
    /// The source does not assemble.
    Asm(AsmError),
    /// `decompile`: the DVLE is not translated.
    Translate {
        /// The SHBIN file.
        path: PathBuf,
        /// The DVLE.
        dvle: usize,
        /// Why.
        error: crate::translate::TranslateError,
    },
    /// `disasm --source`: no picasso source reproduces the file.
    Unrepresentable {
        /// The SHBIN file.
        path: PathBuf,
        /// What cannot be expressed.
        error: Unrepresentable,
    },
    /// The differential tester could not run.
    Difftest(DifftestError),
    /// A trace file is malformed.
    Trace {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        error: crate::gpu::front::trace::TraceError,
    },
    /// Replaying a trace failed.
    Gpu {
        /// The trace.
        path: PathBuf,
        /// What failed.
        error: crate::gpu::GpuError,
    },
    /// A PNG could not be encoded.
    Png {
        /// The file.
        path: PathBuf,
        /// The encoder's message.
        why: String,
    },
}

fn shown(path: &Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Io {
                path,
                action,
                error,
            } => write!(f, "{}: {}: {error}", shown(path), action.verb()),
            CliError::Stdout(error) => write!(f, "cannot write the standard output: {error}"),
            CliError::NotText { path } => write!(f, "{}: not UTF-8 text", shown(path)),
            CliError::Shbin { path, error } => write!(f, "{}: {error}", shown(path)),
            CliError::Program { path, dvle, error } => {
                write!(f, "{}: DVLE {dvle}: {error}", shown(path))
            }
            CliError::NoSuchDvle { path, index, count } => write!(
                f,
                "{}: there is no DVLE {index} (the file has {count}, numbered from 0)",
                shown(path)
            ),
            CliError::Input { path, error } => write!(f, "{}: {error}", shown(path)),
            CliError::NothingToRun { path, kind } => write!(
                f,
                "{}: no {} to run",
                shown(path),
                match kind {
                    ShaderKind::Vertex => "vertices",
                    ShaderKind::Geometry => "invocations",
                }
            ),
            CliError::Bench { path, why } | CliError::Merge { path, why } => {
                write!(f, "{}: {}", shown(path), escape(why))
            }
            CliError::InvalidOption { option, value, why } => {
                write!(f, "{option} {}: {why}", escape(value))
            }
            CliError::Engine(error) => write!(f, "{error}"),
            CliError::Asm(error) => write!(f, "{error}"),
            CliError::Translate { path, dvle, error } => {
                write!(f, "{}: DVLE {dvle}: {error}", shown(path))
            }
            CliError::Unrepresentable { path, error } => write!(f, "{}: {error}", shown(path)),
            CliError::Difftest(error) => write!(f, "{error}"),
            CliError::Trace { path, error } => write!(f, "{}: {error}", shown(path)),
            CliError::Gpu { path, error } => write!(f, "{}: {error}", shown(path)),
            CliError::Png { path, why } => {
                write!(f, "{}: cannot write the PNG: {}", shown(path), escape(why))
            }
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Io { error, .. } | CliError::Stdout(error) => Some(error),
            CliError::Shbin { error, .. } => Some(error),
            CliError::Program { error, .. } => Some(error),
            CliError::Input { error, .. } => Some(error),
            CliError::Engine(error) => Some(error),
            CliError::Asm(error) => Some(error),
            CliError::Unrepresentable { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<EngineError> for CliError {
    fn from(error: EngineError) -> CliError {
        CliError::Engine(error)
    }
}

impl From<AsmError> for CliError {
    fn from(error: AsmError) -> CliError {
        CliError::Asm(error)
    }
}

impl From<DifftestError> for CliError {
    fn from(error: DifftestError) -> CliError {
        CliError::Difftest(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_one_line_naming_what_and_where() {
        let path = PathBuf::from("dir/a\nb\x1b[31m.shbin");
        let errors = [
            (
                CliError::Io {
                    path: path.clone(),
                    action: IoAction::Read,
                    error: io::Error::from(io::ErrorKind::NotFound),
                },
                "dir/a\\nb\\x1b[31m.shbin: cannot read: entity not found",
            ),
            (
                CliError::NoSuchDvle {
                    path: path.clone(),
                    index: 3,
                    count: 1,
                },
                "dir/a\\nb\\x1b[31m.shbin: there is no DVLE 3 (the file has 1, numbered from 0)",
            ),
            (
                CliError::NothingToRun {
                    path: PathBuf::from("in.json"),
                    kind: ShaderKind::Geometry,
                },
                "in.json: no invocations to run",
            ),
            (
                CliError::InvalidOption {
                    option: "--output",
                    value: "out\ndir".to_string(),
                    why: "is for --source".to_string(),
                },
                "--output out\\ndir: is for --source",
            ),
            (
                CliError::Input {
                    path: PathBuf::from("in.json"),
                    error: InputError {
                        location: "vertices[0].v1".to_string(),
                        message: "expected an array".to_string(),
                    },
                },
                "in.json: vertices[0].v1: expected an array",
            ),
        ];
        for (error, expected) in errors {
            assert_eq!(error.to_string(), expected);
        }
    }
}
