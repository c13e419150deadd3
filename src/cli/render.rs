//! `picajit render`: replays a CiTrace scene on the software GPU (docs/gpu.md) and writes the
//! colour buffer the registers name at the end of the chosen frame as a PNG (rows top first),
//! or what an LCD shows (`--screen`), for one frame or for each of a range (`--frames`), and
//! optionally the depth buffer as a 16-bit greyscale PNG. The trace is mapped, not read. `--repeat` replays the scene
//! again on fresh GPUs sharing one program cache (a program is compiled once, as an emulator
//! replaying frames would) and reports the fastest replay; `--timings` adds where its time went
//! by pipeline stage ([`StageTimes`]) and the throughput figures of docs/gpu.md, "Speed".

use std::io::IsTerminal;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::EngineKind;
use crate::engine::cache::ProgramCache;
use crate::engine::parallel::available_threads;
use crate::float24::Precision;
use crate::gpu::fragment::{FRAGMENT_PATHS, SAMPLE_EVERY, STAGE_NAMES};
use crate::gpu::framebuffer::display::Screen;
use crate::gpu::framebuffer::image::{DepthImage, Image};
use crate::gpu::front::trace;
use crate::gpu::front::trace::{Replayer, TraceFile, TraceStream};
use crate::gpu::{Gpu, GpuConfig, GpuError, StageTimes};

use super::error::{CliError, IoAction};
use super::print;

#[derive(clap::Args, Debug)]
pub(super) struct RenderArgs {
    /// The scene: a CiTrace file (`*.ctf`).
    scene: PathBuf,
    /// Where to write the image (PNG); with `--frames`, the folder for one PNG per frame.
    #[arg(short, long)]
    output: PathBuf,
    /// Render up to the end of this frame (counting from 0; default: the whole trace).
    #[arg(long, conflicts_with = "frames")]
    frame: Option<usize>,
    /// Write one PNG per frame of this range into the `--output` folder
    /// (`frame-0000.png`, ...): `A..B` (A to B-1), `A..=B`, `A..` (to the last frame) or `N`.
    #[arg(long, value_parser = parse_frames, conflicts_with_all = ["depth", "repeat", "timings"])]
    frames: Option<Frames>,
    /// Write what this LCD shows (the framebuffer its registers name, as the screen shows it:
    /// 400x240 top, 320x240 bottom) instead of the colour buffer bound at the end.
    #[arg(long, value_enum)]
    screen: Option<ScreenArg>,
    /// Also write the depth buffer (PNG, 16-bit grey).
    #[arg(long)]
    depth: Option<PathBuf>,
    /// The engine shaders run on.
    #[arg(long, value_parser = super::engine_kind(), default_value_t = EngineKind::Auto)]
    engine: EngineKind,
    /// How shader arithmetic rounds.
    #[arg(long, value_parser = super::precision(), default_value_t = Precision::F24Truncate)]
    precision: Precision,
    /// Threads for vertex batches and rasterization (default: every core).
    #[arg(long, value_parser = super::at_least_one)]
    threads: Option<u64>,
    /// Replay this many times (one program cache for all) and report the fastest.
    #[arg(long, default_value_t = 1, value_parser = super::at_least_one)]
    repeat: u64,
    /// Report the time of each pipeline stage and the throughput.
    #[arg(long)]
    timings: bool,
    /// Print one line of JSON instead of the summary (and the table of `--timings`): the
    /// counts, each pipeline stage's time, the fragment paths, the throughput, and with
    /// `--timings` each fragment stage's cost.
    #[arg(long, conflicts_with = "frames")]
    json: bool,
    /// Which fragment paths draws may take (docs/gpu.md, "Fragment paths"); the image is the
    /// same either way.
    #[arg(long, value_enum, default_value_t = FragmentPathArg::Specialised)]
    fragment_path: FragmentPathArg,
}

/// The fragment paths `--fragment-path` allows.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FragmentPathArg {
    /// The path each draw's state allows: the specialised paths when nothing but the vertex
    /// colour and 2D textures without a level of detail is read.
    Specialised,
    /// Every fragment through every stage the registers turn on (to time or check the paths).
    General,
}

/// The LCD `--screen` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ScreenArg {
    /// The top screen (its left-eye framebuffer).
    Top,
    /// The bottom screen.
    Bottom,
}

impl ScreenArg {
    fn screen(self) -> Screen {
        match self {
            ScreenArg::Top => Screen::Top,
            ScreenArg::Bottom => Screen::Bottom,
        }
    }
}

/// A range of frames, `first` to `last` inclusive (`None`: the trace's last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Frames {
    first: usize,
    last: Option<usize>,
}

/// Parses `A..B`, `A..=B`, `A..` or `N`.
fn parse_frames(text: &str) -> Result<Frames, String> {
    let number = |t: &str| {
        t.parse::<usize>()
            .map_err(|e| format!("{t:?} is not a frame number: {e}"))
    };
    let Some((first, rest)) = text.split_once("..") else {
        let n = number(text)?;
        return Ok(Frames {
            first: n,
            last: Some(n),
        });
    };
    let first = number(first)?;
    let last = if rest.is_empty() {
        None
    } else if let Some(last) = rest.strip_prefix('=') {
        Some(number(last)?)
    } else {
        let end = number(rest)?;
        if end == 0 {
            return Err(format!("{text}: the range is empty"));
        }
        Some(end - 1)
    };
    match last {
        Some(last) if last < first => Err(format!("{text}: the range is empty")),
        _ => Ok(Frames { first, last }),
    }
}

/// The trace file, mapped into memory (a trace of hundreds of megabytes is not copied).
pub(super) struct MappedTrace {
    map: Option<memmap2::Mmap>,
}

impl MappedTrace {
    pub(super) fn open(path: &Path) -> Result<MappedTrace, CliError> {
        let io_error = |error| CliError::Io {
            path: path.to_path_buf(),
            action: IoAction::Read,
            error,
        };
        let file = std::fs::File::open(path).map_err(io_error)?;
        let len = file.metadata().map_err(io_error)?.len();
        if len == 0 {
            // Nothing to map (mapping zero bytes fails on some systems); parsing reports it.
            return Ok(MappedTrace { map: None });
        }
        // SAFETY: the map is only read. A file changed by another process while it is mapped
        // would change what replay reads (never its bounds: every element is checked against
        // the length when the trace is parsed, and the length of a map does not change).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_error)?;
        Ok(MappedTrace { map: Some(map) })
    }

    pub(super) fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

pub(super) fn render_command(args: &RenderArgs) -> Result<ExitCode, CliError> {
    // `-o` is a folder with `--frames` whatever the range holds (one frame or many), and a
    // file without it: a PNG's name given for the folder is a mistake, not a folder to make.
    if args.frames.is_some()
        && args
            .output
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
    {
        return Err(CliError::InvalidOption {
            option: "--output",
            value: args.output.display().to_string(),
            why: "with --frames it names the folder that gets one frame-NNNN.png per frame \
                  (give a folder, or --frame N for one picture)"
                .to_string(),
        });
    }
    let mapped = MappedTrace::open(&args.scene)?;
    let scene = TraceFile::parse(mapped.bytes()).map_err(|error| CliError::Trace {
        path: args.scene.clone(),
        error,
    })?;
    let frames = scene.frames();
    let beyond = |option: &'static str, value: String| CliError::InvalidOption {
        option,
        value,
        why: format!("the trace has {frames} frames (numbered from 0)"),
    };
    if let Some(frame) = args.frame
        && frame >= frames.max(1)
    {
        return Err(beyond("--frame", frame.to_string()));
    }
    let config = GpuConfig {
        engine: args.engine,
        precision: args.precision,
        threads: args.threads.map_or_else(available_threads, |t| t as usize),
        sample_fragment_stages: args.timings,
        specialise_fragments: args.fragment_path == FragmentPathArg::Specialised,
        ..GpuConfig::default()
    };
    if let Some(range) = args.frames {
        let last = range.last.unwrap_or(frames.saturating_sub(1));
        if range.first >= frames || last >= frames {
            let shown = range.last.map_or(format!("{}..", range.first), |l| {
                format!("{}..={l}", range.first)
            });
            return Err(beyond("--frames", shown));
        }
        return render_frames(&scene, Gpu::new(config), args, range.first..=last);
    }
    let cache = Arc::new(ProgramCache::new(NonZeroUsize::new(64).expect("non-zero")));
    let mut best: Option<(Duration, Replayer)> = None;
    for round in 0..args.repeat {
        let started = Instant::now();
        let replayer = replay(
            &scene,
            Gpu::with_cache(config, cache.clone()),
            args,
            round == 0,
        )
        .map_err(|error| CliError::Gpu {
            path: args.scene.clone(),
            error,
        })?;
        let elapsed = started.elapsed();
        if best.as_ref().is_none_or(|(fastest, _)| elapsed < *fastest) {
            best = Some((elapsed, replayer));
        }
    }
    let (elapsed, replayer) = best.expect("at least one round");
    let image = image_of(&replayer, args, "at the end of the trace")?;
    write_color(&args.output, &image)?;
    let gpu = &replayer.gpu;
    if let Some(path) = &args.depth {
        let depth = gpu.depth_image().map_err(|error| CliError::Gpu {
            path: args.scene.clone(),
            error,
        })?;
        match depth {
            Some(depth) => write_depth(path, &depth)?,
            None => {
                return Err(CliError::InvalidOption {
                    option: "--depth",
                    value: path.display().to_string(),
                    why: "no depth buffer is bound at the end of the trace".to_string(),
                });
            }
        }
    }
    let stats = &gpu.stats;
    let raster = &gpu.raster_stats;
    if args.json {
        let line = json_line(&replayer, args, &config, &image, elapsed);
        print(&format!("{line}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    print(&format!(
        "{}: {} frames, {} draws, {} vertices, {} triangles, {} fragments, {}x{} image, {:.1} ms ({} engine, {} threads)\n",
        args.scene.display(),
        replayer.stats.frames,
        stats.draws,
        stats.vertices,
        raster.triangles,
        raster.fragments,
        image.width,
        image.height,
        elapsed.as_secs_f64() * 1e3,
        args.engine,
        config.threads,
    ))?;
    if args.timings {
        print(&timings(&replayer.gpu, elapsed))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The picture `--screen` asks for (the LCD's, or the colour buffer bound), `when` saying at
/// which point of the trace for the error.
fn image_of(replayer: &Replayer, args: &RenderArgs, when: &str) -> Result<Image, CliError> {
    if let Some(screen) = args.screen {
        return replayer
            .screen_image(screen.screen())
            .map_err(|error| CliError::InvalidOption {
                option: "--screen",
                value: screen.screen().name().to_string(),
                why: format!("{error} {when}"),
            });
    }
    let image = replayer.gpu.color_image().map_err(|error| CliError::Gpu {
        path: args.scene.clone(),
        error,
    })?;
    image.ok_or_else(|| CliError::InvalidOption {
        option: "--output",
        value: args.output.display().to_string(),
        why: format!("no colour buffer is bound {when}"),
    })
}

/// `--frames`: replays to the end of the range, writing the picture at the end of each frame
/// in it as `frame-NNNN.png` in the output folder.
fn render_frames(
    scene: &TraceFile<'_>,
    gpu: Gpu,
    args: &RenderArgs,
    range: std::ops::RangeInclusive<usize>,
) -> Result<ExitCode, CliError> {
    std::fs::create_dir_all(&args.output).map_err(|error| CliError::Io {
        path: args.output.clone(),
        action: IoAction::Create,
        error,
    })?;
    let gpu_error = |error| CliError::Gpu {
        path: args.scene.clone(),
        error,
    };
    let started = Instant::now();
    let mut replayer = Replayer::new(gpu, scene.initial());
    let mut written = 0;
    for op in scene.ops() {
        if !replayer.step(op).map_err(gpu_error)? {
            continue;
        }
        // The frame that just ended (frame N ends at the (N + 1)th marker).
        let frame = replayer.stats.frames as usize - 1;
        if range.contains(&frame) {
            replayer.gpu.finish().map_err(gpu_error)?;
            let image = image_of(&replayer, args, &format!("at the end of frame {frame}"))?;
            write_color(&args.output.join(format!("frame-{frame:04}.png")), &image)?;
            written += 1;
        }
        if frame == *range.end() {
            break;
        }
    }
    print(&format!(
        "{}: {written} frames ({}..={}) written to {}, {:.1} ms ({} engine)\n",
        args.scene.display(),
        range.start(),
        range.end(),
        args.output.display(),
        started.elapsed().as_secs_f64() * 1e3,
        args.engine,
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Replays the scene, with a progress bar on the first round of a long trace.
fn replay(
    scene: &TraceFile<'_>,
    gpu: Gpu,
    args: &RenderArgs,
    first: bool,
) -> Result<Replayer, GpuError> {
    let bar = if first {
        progress_bar(scene.elements())
    } else {
        None
    };
    let replayed = trace::replay(scene, gpu, args.frame, |done, _| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    replayed
}

/// A pipeline stage's row: its name, time, the item it is counted per and how many.
type StageRow = (&'static str, Duration, &'static str, u64);

/// Each pipeline stage's time and the items it handled; the rest of `elapsed` is "commands,
/// transfers, other".
fn stage_rows(gpu: &Gpu, elapsed: Duration) -> [StageRow; 9] {
    let times: &StageTimes = &gpu.times;
    let invocations = gpu.stats.vertex_invocations;
    let triangles = gpu.stats.triangles;
    let fragments = gpu.raster_stats.fragments;
    let other = elapsed.saturating_sub(times.total());
    [
        ("program preparation", times.prepare, "", 0),
        (
            "vertex load",
            times.vertex_load,
            "per invocation",
            invocations,
        ),
        (
            "vertex shader",
            times.vertex_shader,
            "per invocation",
            invocations,
        ),
        (
            "primitives (GS, assembly)",
            times.primitives,
            "per triangle",
            triangles,
        ),
        ("clip and set-up", times.setup, "per triangle", triangles),
        ("texture decoding", times.textures, "", 0),
        ("fragments", times.fragments, "per fragment", fragments),
        ("target load and store", times.target, "", 0),
        ("commands, transfers, other", other, "", 0),
    ]
}

/// The run as one line of JSON (`--json`).
fn json_line(
    replayer: &Replayer,
    args: &RenderArgs,
    config: &GpuConfig,
    image: &Image,
    elapsed: Duration,
) -> serde_json::Value {
    let gpu = &replayer.gpu;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let seconds = elapsed.as_secs_f64().max(1e-12);
    let stages: serde_json::Map<String, serde_json::Value> = stage_rows(gpu, elapsed)
        .iter()
        .map(|&(name, time, _, count)| {
            let each = (count > 0).then(|| time.as_secs_f64() * 1e9 / count as f64);
            (
                name.to_string(),
                serde_json::json!({"ms": ms(time), "ns_each": each, "items": count}),
            )
        })
        .collect();
    let samples = &gpu.times.fragment_stages;
    let fragment_stages: serde_json::Map<String, serde_json::Value> = STAGE_NAMES
        .iter()
        .enumerate()
        .filter(|&(k, _)| samples.fragments[k] > 0)
        .map(|(k, name)| {
            let ns = samples.time[k].as_secs_f64() * 1e9 / samples.fragments[k] as f64;
            (
                name.to_string(),
                serde_json::json!({"ns_per_fragment": ns, "timed": samples.fragments[k]}),
            )
        })
        .collect();
    let paths: serde_json::Map<String, serde_json::Value> = FRAGMENT_PATHS
        .iter()
        .zip(gpu.raster_stats.paths)
        .map(|(name, n)| (name.to_string(), serde_json::json!(n)))
        .collect();
    let (triangles, drawn) = (gpu.stats.triangles, gpu.raster_stats.triangles);
    let fragments = gpu.raster_stats.fragments;
    serde_json::json!({
        "scene": args.scene.display().to_string(),
        "frames": replayer.stats.frames,
        "draws": gpu.stats.draws,
        "vertices": gpu.stats.vertices,
        "vertex_invocations": gpu.stats.vertex_invocations,
        "triangles_in": triangles,
        "triangles": drawn,
        "fragments": fragments,
        "width": image.width,
        "height": image.height,
        "engine": args.engine.name(),
        "precision": args.precision.name(),
        "threads": config.threads,
        "repeat": args.repeat,
        "ms": ms(elapsed),
        "stages": stages,
        "fragment_stages": fragment_stages,
        "fragment_paths": paths,
        "triangles_per_s": triangles as f64 / seconds,
        "triangles_drawn_per_s": drawn as f64 / seconds,
        "fragments_per_s": fragments as f64 / seconds,
    })
}

/// The stage table: each stage's time, share of the replay, and cost per item it handles.
fn timings(gpu: &Gpu, elapsed: Duration) -> String {
    let times: &StageTimes = &gpu.times;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let per = |d: Duration, n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            format!("{:.1} ns", d.as_secs_f64() * 1e9 / n as f64)
        }
    };
    let invocations = gpu.stats.vertex_invocations;
    let triangles = gpu.stats.triangles;
    let drawn = gpu.raster_stats.triangles;
    let fragments = gpu.raster_stats.fragments;
    let mut out = String::from("stage                          ms  share  cost\n");
    for (name, time, unit, count) in stage_rows(gpu, elapsed) {
        let share = 100.0 * time.as_secs_f64() / elapsed.as_secs_f64().max(1e-12);
        let cost = if count == 0 {
            String::new()
        } else {
            format!("{} {unit}", per(time, count))
        };
        out += &format!("{name:<27}{:>8.3}{share:>6.1}%  {cost}\n", ms(time));
    }
    let stages = &times.fragment_stages;
    let sampled = stages.fragments.iter().max().copied().unwrap_or(0);
    if sampled > 0 {
        out += &format!(
            "fragment stages, timed on one fragment in {SAMPLE_EVERY} ({sampled} timed; a stage counts the fragments that ran it):\n"
        );
        for (k, name) in STAGE_NAMES.iter().enumerate() {
            let count = stages.fragments[k];
            if count > 0 {
                out += &format!(
                    "  {name:<25}{:>10} per fragment  ({count} timed)\n",
                    per(stages.time[k], count)
                );
            }
        }
    }
    let paths = gpu.raster_stats.paths;
    if paths.iter().filter(|&&n| n > 0).count() > 0 {
        let shares: Vec<String> = FRAGMENT_PATHS
            .iter()
            .zip(paths)
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        out += &format!("fragment paths: {}\n", shares.join(", "));
    }
    let vertex = times.vertex_load + times.vertex_shader;
    let seconds = elapsed.as_secs_f64().max(1e-12);
    out += &format!(
        "vertex stage: {:.1}% of the replay, {} per invocation ({invocations} invocations for {} vertices)\n",
        100.0 * vertex.as_secs_f64() / seconds,
        per(vertex, invocations),
        gpu.stats.vertices,
    );
    out += &format!(
        "throughput: {:.0} triangles/s in ({triangles}), {:.0} triangles/s drawn ({drawn}), {:.0} fragments/s ({fragments})\n",
        triangles as f64 / seconds,
        drawn as f64 / seconds,
        fragments as f64 / seconds,
    );
    out
}

fn progress_bar(total: usize) -> Option<indicatif::ProgressBar> {
    if total < 10_000 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("render [{elapsed_precise}] {bar:20} {pos}/{len}")
    {
        bar.set_style(style);
    }
    Some(bar)
}

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, CliError> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|error| CliError::Io {
            path: path.to_path_buf(),
            action: IoAction::Create,
            error,
        })
}

fn png_error(path: &Path) -> impl Fn(png::EncodingError) -> CliError + '_ {
    move |error| CliError::Png {
        path: path.to_path_buf(),
        why: error.to_string(),
    }
}

fn write_color(path: &Path, image: &Image) -> Result<(), CliError> {
    let mut encoder = png::Encoder::new(create(path)?, image.width, image.height);
    // The fastest deflate with the Up filter: the balanced default took 13 % of a one-frame
    // replay of a 240x400 trace to save a few kilobytes, and the fast one's adaptive filter
    // still 9 % of a small scene's whole run (callgrind), for files a quarter smaller.
    encoder.set_compression(png::Compression::Fastest);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(png_error(path))?;
    let data: Vec<u8> = image.pixels.iter().flatten().copied().collect();
    writer.write_image_data(&data).map_err(png_error(path))?;
    writer.finish().map_err(png_error(path))
}

fn write_depth(path: &Path, depth: &DepthImage) -> Result<(), CliError> {
    let mut encoder = png::Encoder::new(create(path)?, depth.width, depth.height);
    encoder.set_compression(png::Compression::Fastest);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Sixteen);
    let mut writer = encoder.write_header().map_err(png_error(path))?;
    let shift = depth.bits.saturating_sub(16);
    let data: Vec<u8> = depth
        .values
        .iter()
        .flat_map(|&d| ((d >> shift) as u16).to_be_bytes())
        .collect();
    writer.write_image_data(&data).map_err(png_error(path))?;
    writer.finish().map_err(png_error(path))
}
