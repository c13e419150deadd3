//! What to run: the paths given (SHBIN files, program folders, folders searched; docs/cli.md,
//! "What `bench` runs"), the corpus by default, and every target's jobs.

use super::*;

/// The corpus: `corpus/` here, else the one this binary was built from.
pub(super) fn default_corpus() -> Option<PathBuf> {
    let here = PathBuf::from("corpus");
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    [here, built].into_iter().find(|p| p.is_dir())
}

pub(super) fn nothing(path: &Path, why: &str) -> CliError {
    CliError::Bench {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// The programs to measure; the scenes found on the way go to `scenes`.
pub(super) fn targets(
    options: &Options,
    scenes: &mut Vec<PathBuf>,
) -> Result<Vec<Target>, CliError> {
    let paths = if options.paths.is_empty() {
        vec![default_corpus().ok_or_else(|| {
            nothing(
                Path::new("corpus"),
                "no such folder: give SHBIN files, program folders or directories",
            )
        })?]
    } else {
        options.paths.clone()
    };
    if let Some(input) = &options.input {
        let single_file = paths.len() == 1 && !paths[0].is_dir();
        if !single_file {
            return Err(CliError::InvalidOption {
                option: "--input",
                value: input.display().to_string(),
                why: "is for a single SHBIN file (program folders and directories use their \
                      own fixtures)"
                    .to_string(),
            });
        }
    }
    let mut targets = Vec::new();
    for path in &paths {
        let metadata = std::fs::metadata(path).map_err(|error| CliError::Io {
            path: path.clone(),
            action: super::super::IoAction::Read,
            error,
        })?;
        let before = (targets.len(), scenes.len());
        scenes::find(path, 0, scenes)?;
        if metadata.is_dir() {
            add_directory(path, options, 0, &mut targets)?;
        } else if scenes.len() == before.1 {
            let input = match &options.input {
                Some(input) => input.clone(),
                None => path.with_extension("json"),
            };
            if !input.is_file() {
                return Err(nothing(
                    path,
                    &format!(
                        "no input file: give --input IN.json or put {} beside it",
                        input.file_name().map_or_else(
                            || "FILE.json".to_string(),
                            |n| n.to_string_lossy().into_owned()
                        )
                    ),
                ));
            }
            add_shbin(path, input, options, &mut targets)?;
        }
        if (targets.len(), scenes.len()) == before {
            return Err(nothing(
                path,
                "holds no SHBIN file with its FILE.json, no program folder (*.pica sources \
                 with dvleN.input.json fixtures) and no scene (*.ctf) to bench",
            ));
        }
    }
    Ok(targets)
}

/// The display name of a path: its last component.
pub(super) fn short_name(path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    escape(&name).into_owned()
}

pub(super) fn add_shbin(
    path: &Path,
    input: PathBuf,
    options: &Options,
    targets: &mut Vec<Target>,
) -> Result<(), CliError> {
    let shbin = Arc::new(load_shbin(path)?);
    let dvle = options.dvle.unwrap_or(0);
    load_dvle(path, &shbin, dvle)?;
    targets.push(Target {
        name: short_name(path),
        path: path.to_path_buf(),
        shbin,
        dvle,
        input,
    });
    Ok(())
}

/// The sorted entries of a folder.
pub(super) fn entries(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let io_error = |error| CliError::Io {
        path: dir.to_path_buf(),
        action: super::super::IoAction::Read,
        error,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        paths.push(entry.map_err(io_error)?.path());
    }
    paths.sort();
    Ok(paths)
}

pub(super) fn has_extension(path: &Path, extension: &str) -> bool {
    path.extension().is_some_and(|e| e == extension)
}

/// What a folder given to `bench`, or met in a search, is (docs/cli.md, "What `bench` runs"):
/// it is a **program folder** when it holds a fixture `dvleN.input.json`, and its `*.pica`
/// files are then one program, assembled in name order (one DVLE each). Whatever it is, its
/// SHBIN files with inputs and its subfolders are searched too, and its scenes are found by
/// [`scenes::find`]. `*.pica` sources in a folder without a fixture are no program
/// (nothing says what to run them on): a warning names them.
pub(super) fn add_directory(
    dir: &Path,
    options: &Options,
    depth: usize,
    targets: &mut Vec<Target>,
) -> Result<(), CliError> {
    let paths = entries(dir)?;
    let sources = paths
        .iter()
        .filter(|p| p.is_file() && has_extension(p, "pica"))
        .count();
    if paths
        .iter()
        .any(|p| p.is_file() && fixture_index(p).is_some())
    {
        add_program_folder(dir, &paths, options, targets)?;
    } else if sources > 0 {
        warn(&format!(
            "warning: {}: skipped {sources} *.pica source(s): a program folder holds a \
             fixture dvleN.input.json for each DVLE to bench",
            dir.display()
        ));
    }
    for path in paths {
        if path.is_dir() {
            if depth < MAX_DEPTH {
                add_directory(&path, options, depth + 1, targets)?;
            }
        } else if has_extension(&path, "shbin") {
            let input = path.with_extension("json");
            if input.is_file() {
                add_shbin(&path, input, options, targets)?;
            } else {
                warn(&format!(
                    "warning: {}: skipped: no {} beside it",
                    path.display(),
                    short_name(&input)
                ));
            }
        }
    }
    Ok(())
}

/// The DVLE index of a fixture file name `dvleN.input.json`.
pub(super) fn fixture_index(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("dvle")?
        .strip_suffix(".input.json")?
        .parse()
        .ok()
}

pub(super) fn add_program_folder(
    dir: &Path,
    paths: &[PathBuf],
    options: &Options,
    targets: &mut Vec<Target>,
) -> Result<(), CliError> {
    let name = short_name(dir);
    let mut sources = Vec::new();
    for path in paths.iter().filter(|p| has_extension(p, "pica")) {
        sources.push(SourceFile {
            name: format!("{}/{}", dir.display(), short_name(path)),
            text: read_text(path)?,
        });
    }
    if sources.is_empty() {
        return Err(nothing(
            dir,
            "holds fixtures (dvleN.input.json) but no *.pica sources to assemble",
        ));
    }
    let shbin = Arc::new(asm::assemble(&sources, AsmOptions::default())?.shbin);
    let mut fixtures: Vec<(usize, PathBuf)> = paths
        .iter()
        .filter_map(|p| Some((fixture_index(p)?, p.clone())))
        .filter(|(index, _)| options.dvle.is_none_or(|d| d == *index))
        .collect();
    fixtures.sort();
    if let Some(dvle) = options.dvle
        && fixtures.is_empty()
    {
        return Err(nothing(dir, &format!("no fixture dvle{dvle}.input.json")));
    }
    for (dvle, input) in fixtures {
        load_dvle(dir, &shbin, dvle)?;
        targets.push(Target {
            name: name.clone(),
            path: dir.to_path_buf(),
            shbin: shbin.clone(),
            dvle,
            input,
        });
    }
    Ok(())
}

/// Every target in every precision mode, its input parsed (so a bad input fails before
/// anything is measured): the jobs of this shard, and how many the whole run has.
pub(super) fn jobs<'a>(
    targets: &'a [Target],
    options: &Options,
) -> Result<(Vec<Job<'a>>, u64), CliError> {
    let mut jobs = Vec::new();
    let mut total = 0;
    for target in targets {
        let text = read_text(&target.input)?;
        let (dvle, program) = load_dvle(&target.path, &target.shbin, target.dvle)?;
        for (i, &precision) in options.precisions.iter().enumerate() {
            let input =
                parse_input_for(&text, precision, dvle).map_err(|error| CliError::Input {
                    path: target.input.clone(),
                    error,
                })?;
            if i == 0 {
                for warning in &input.warnings {
                    warn(&format!("warning: {}: {warning}", target.input.display()));
                }
            }
            if input.invocations.is_empty() {
                return Err(CliError::NothingToRun {
                    path: target.input.clone(),
                    kind: dvle.kind,
                });
            }
            let index = total;
            total += 1;
            if options.shard.contains(index) {
                jobs.push(Job {
                    index,
                    target,
                    precision,
                    program: program.clone(),
                    input,
                });
            }
        }
    }
    Ok((jobs, total))
}
