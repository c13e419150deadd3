//! `picajit render`: replays a CiTrace scene on the software GPU (docs/gpu.md) and writes the
//! colour buffer the registers name at the end of the chosen frame as a PNG (rows top first),
//! and optionally the depth buffer as a 16-bit greyscale PNG.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::engine::EngineKind;
use crate::engine::parallel::available_threads;
use crate::float24::Precision;
use crate::gpu::image::{DepthImage, Image};
use crate::gpu::trace;
use crate::gpu::{Gpu, GpuConfig};

use super::error::{CliError, IoAction};
use super::{print, read};

#[derive(clap::Args, Debug)]
pub(super) struct RenderArgs {
    /// The scene: a CiTrace file (`*.ctf`).
    scene: PathBuf,
    /// Where to write the colour buffer (PNG).
    #[arg(short, long)]
    output: PathBuf,
    /// Render up to the end of this frame (counting from 0; default: the whole trace).
    #[arg(long)]
    frame: Option<usize>,
    /// Also write the depth buffer (PNG, 16-bit grey).
    #[arg(long)]
    depth: Option<PathBuf>,
    /// The engine shaders run on.
    #[arg(long, value_enum, default_value_t = EngineKind::Auto)]
    engine: EngineKind,
    /// How shader arithmetic rounds.
    #[arg(long, value_enum, default_value_t = Precision::F24Truncate)]
    precision: Precision,
    /// Threads for vertex batches and rasterization (default: every core).
    #[arg(long, value_parser = super::at_least_one)]
    threads: Option<u64>,
}

pub(super) fn render_command(args: &RenderArgs) -> Result<ExitCode, CliError> {
    let bytes = read(&args.scene)?;
    let scene = trace::read(&bytes).map_err(|error| CliError::Trace {
        path: args.scene.clone(),
        error,
    })?;
    if let Some(frame) = args.frame
        && frame >= scene.frames().max(1)
    {
        return Err(CliError::InvalidOption {
            option: "--frame",
            value: frame.to_string(),
            why: format!("the trace has {} frames", scene.frames()),
        });
    }
    let config = GpuConfig {
        engine: args.engine,
        precision: args.precision,
        threads: args.threads.map_or_else(available_threads, |t| t as usize),
        ..GpuConfig::default()
    };
    let bar = progress_bar(scene.ops.len());
    let started = Instant::now();
    let replayed = trace::replay(&scene, Gpu::new(config), args.frame, |done, _| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let replayer = replayed.map_err(|error| CliError::Gpu {
        path: args.scene.clone(),
        error,
    })?;
    let elapsed = started.elapsed();
    let gpu = &replayer.gpu;
    let gpu_error = |error| CliError::Gpu {
        path: args.scene.clone(),
        error,
    };
    let Some(image) = gpu.color_image().map_err(gpu_error)? else {
        return Err(CliError::InvalidOption {
            option: "--output",
            value: args.output.display().to_string(),
            why: "no colour buffer is bound at the end of the trace".to_string(),
        });
    };
    write_color(&args.output, &image)?;
    if let Some(path) = &args.depth {
        match gpu.depth_image().map_err(gpu_error)? {
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
    Ok(ExitCode::SUCCESS)
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
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(png_error(path))?;
    let data: Vec<u8> = image.pixels.iter().flatten().copied().collect();
    writer.write_image_data(&data).map_err(png_error(path))?;
    writer.finish().map_err(png_error(path))
}

fn write_depth(path: &Path, depth: &DepthImage) -> Result<(), CliError> {
    let mut encoder = png::Encoder::new(create(path)?, depth.width, depth.height);
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
