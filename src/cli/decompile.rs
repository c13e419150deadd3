//! `picajit decompile`: a DVLE translated for host GPUs (docs/gpu-shaders.md), written as
//! readable shader source with each statement's address and instruction in a comment and the
//! DVLE's register names beside them, or as a SPIR-V module whose source text is that listing.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use super::{CliError, load_dvle, load_shbin, precision, print_bytes, write_file};
use crate::asm::text::escape;
use crate::exec::DEFAULT_INSTRUCTION_BUDGET;
use crate::float24::Precision;
use crate::translate::glsl::Dialect;
use crate::translate::interface::Interface;
use crate::translate::names::Names;
use crate::translate::spv::{self, SpirvOptions};
use crate::translate::{Options, glsl, spirv, translate_named};

/// The language written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// GLSL 3.30 core (desktop OpenGL 3.3).
    Glsl,
    /// GLSL ES 3.00 (OpenGL ES 3.0, Android).
    GlslEs,
    /// GLSL 4.50 core, with `precise` on every arithmetic result.
    Glsl450,
    /// GLSL ES 3.20, with `precise` on every arithmetic result.
    GlslEs320,
    /// A SPIR-V 1.0 module for Vulkan (binary; `spirv-dis` shows it as text), with
    /// `NoContraction` on every arithmetic result.
    Spirv,
}

impl Lang {
    /// The GLSL dialect, or `None` for SPIR-V.
    fn dialect(self) -> Option<Dialect> {
        match self {
            Lang::Glsl => Some(Dialect::Glsl330),
            Lang::GlslEs => Some(Dialect::Es300),
            Lang::Glsl450 => Some(Dialect::Glsl450),
            Lang::GlslEs320 => Some(Dialect::Es320),
            Lang::Spirv => None,
        }
    }
}

/// Which form the control flow may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormArg {
    /// The structured form where the program allows it, else the general one.
    Best,
    /// The general form (the dispatch loop) always.
    Dispatch,
}

/// `picajit decompile`'s arguments.
#[derive(clap::Args, Debug)]
pub struct DecompileArgs {
    /// The SHBIN file.
    program: PathBuf,
    /// Which DVLE (entry point) to translate.
    #[arg(long, default_value_t = 0)]
    dvle: usize,
    /// The language to write.
    #[arg(long, value_enum, default_value_t = Lang::Glsl)]
    lang: Lang,
    /// How arithmetic results are rounded (the translation is exact in each mode).
    #[arg(long, value_parser = precision(), default_value_t = Precision::F24Truncate)]
    precision: Precision,
    /// The instruction budget of one invocation; a vertex that exceeds it stops there.
    #[arg(long, default_value_t = DEFAULT_INSTRUCTION_BUDGET)]
    budget: u64,
    /// `dispatch`: the general form even where the program allows the structured one.
    #[arg(long, value_enum, default_value_t = FormArg::Best)]
    form: FormArg,
    /// Write the source here instead of the standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Translates, prints or writes; exit status 0, or 2 with one line on stderr.
pub fn command(args: &DecompileArgs) -> Result<ExitCode, CliError> {
    let shbin = load_shbin(&args.program)?;
    let (dvle, program) = load_dvle(&args.program, &shbin, args.dvle)?;
    let options = Options {
        precision: args.precision,
        instruction_budget: args.budget,
        end_state: false,
        structure: args.form == FormArg::Best,
        comments: true,
    };
    let names = Names::of_dvle(dvle);
    let translation = translate_named(&program, &options, "main", &names).map_err(|error| {
        CliError::Translate {
            path: args.program.clone(),
            dvle: args.dvle,
            error,
        }
    })?;
    let interface = Interface {
        banner: banner(
            args,
            &names,
            &form_text(&translation),
            translation.module.geometry.is_some(),
        ),
        ..Interface::default()
    };
    let printed = match args.lang.dialect() {
        Some(dialect) => glsl(&translation, dialect, &interface).map(String::into_bytes),
        None => spirv(
            &translation,
            &interface,
            &SpirvOptions {
                listing: true,
                ..SpirvOptions::default()
            },
        )
        .map(|words| spv::to_bytes(&words)),
    };
    let bytes = printed.map_err(|error| CliError::Translate {
        path: args.program.clone(),
        dvle: args.dvle,
        error,
    })?;
    match &args.output {
        Some(path) => write_file(path, &bytes)?,
        None if args.lang == Lang::Spirv && std::io::stdout().is_terminal() => {
            return Err(CliError::InvalidOption {
                option: "--lang",
                value: "spirv".to_string(),
                why: "is binary: write it with -o FILE.spv (spirv-dis shows it as text)"
                    .to_string(),
            });
        }
        None => print_bytes(&bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The form the translation took, and why not the structured one when not.
fn form_text(translation: &crate::translate::Translation) -> String {
    match translation.unstructured {
        Some(why) => format!("{} form ({})", translation.form.name(), why.describe()),
        None => format!("{} form", translation.form.name()),
    }
}

/// The comment lines at the top: what was translated, how, and the DVLE's names.
fn banner(args: &DecompileArgs, names: &Names, form: &str, geometry: bool) -> String {
    let file = args
        .program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut text = format!(
        "// {} DVLE {}, translated by picajit {} (docs/gpu-shaders.md)\n\
         // precision {}, control flow in the {form}, budget {} instructions\n\
         // inputs v0-v15 at locations 0-15; uniforms c0-c95, i0-i3, b0-b15 in the block below\n\
         // (each register's IEEE bits); outputs o0-o15 (the output map stays the caller's)\n",
        escape(&file),
        args.dvle,
        env!("CARGO_PKG_VERSION"),
        args.precision.name(),
        args.budget,
    );
    if geometry {
        text += "// a geometry shader: one invocation per input point, whose v0-v15 it reads; the\n\
                 // state an invocation starts from in pica_geometry_state; each PICA triangle a strip\n";
    }
    let named: Vec<String> = names.all().map(|(r, n)| format!("{r} {n}")).collect();
    for line in named.chunks(6) {
        text += &format!("// names: {}\n", escape(&line.join(", ")));
    }
    text
}
