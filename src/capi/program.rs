//! Uploading programs: the program cache, SHBIN blobs, engines and their layout.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::{
    CapiError, OK, engine_kind, free_handle, guard, guard_infallible, precision, ptr_mut, ptr_ref,
    slice_of, stage, store_handle,
};
use crate::engine::cache::{DEFAULT_CAPACITY, ProgramCache};
use crate::engine::{prepare, prepare_cached};
use crate::exec::{
    BatchLayout, DEFAULT_INSTRUCTION_BUDGET, ExecConfig, Hosted, ShaderEngine, VertexRunner,
};
use crate::float24::Precision;
use crate::program::{ShaderKind, ShaderProgram};
use crate::shbin::Shbin;

/// `picajit_cache`: a bounded program cache, shared by every thread and engine that uses it,
/// and the batch layout of each program prepared through it, worked out once per prepared
/// program: a hit then costs the cache's lookup, not a decode of the program.
#[derive(Debug)]
pub struct ProgramCacheHandle {
    /// The cache.
    pub cache: Arc<ProgramCache>,
    /// Each prepared program's layout, by the address of its engine. A `Weak` keeps its
    /// engine's allocation, so no other engine takes that address while the entry is here.
    layouts: Mutex<HashMap<usize, KnownLayout>>,
}

/// A prepared program's layout, and a weak reference to its engine (alive while the engine is).
type KnownLayout = (Weak<dyn ShaderEngine>, BatchLayout);

impl ProgramCacheHandle {
    /// A handle on `cache`.
    pub fn new(cache: Arc<ProgramCache>) -> ProgramCacheHandle {
        ProgramCacheHandle {
            cache,
            layouts: Mutex::default(),
        }
    }

    /// The batch layout of `engine`, a program prepared through this cache: remembered from
    /// the first time, worked out ([`BatchLayout::of`]) then. Entries of engines no longer
    /// held anywhere are dropped once there are twice as many entries as the cache holds.
    fn layout_of(&self, engine: &Arc<dyn ShaderEngine>) -> BatchLayout {
        let address = Arc::as_ptr(engine) as *const () as usize;
        let mut layouts = self.layouts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, layout)) = layouts.get(&address)
            && held.strong_count() > 0
        {
            return *layout;
        }
        let layout = BatchLayout::of(engine.program());
        if layouts.len() >= 2 * self.cache.capacity().get() {
            layouts.retain(|_, (held, _)| held.strong_count() > 0);
        }
        layouts.insert(address, (Arc::downgrade(engine), layout));
        layout
    }
}

/// `picajit_shbin`: a parsed SHBIN blob.
#[derive(Debug)]
pub struct ShbinHandle(pub Shbin);

/// `picajit_engine`: a program prepared by one engine, and its batch layout.
pub struct EngineHandle {
    /// The prepared program (shared with a cache when it came through one).
    pub engine: Arc<dyn ShaderEngine>,
    /// Which registers a batch of it carries.
    pub layout: BatchLayout,
    /// The program's stage and the engine's precision, asked once: a run call checks both.
    pub stage: ShaderKind,
    /// See `stage`.
    pub precision: Precision,
    /// The engine that runs single vertices for good, once it is settled
    /// ([`crate::exec::HostPaths::vertex_runner`]): called directly, past the wrappers.
    vertex: OnceLock<Arc<dyn ShaderEngine>>,
    /// Batch calls in a row that the engine did not run as vertex records
    /// ([`crate::exec::HostPaths::run_records`]); see [`records_worth_trying`](Self::records_worth_trying).
    records_declined: AtomicU32,
}

/// After this many batch calls in a row that an engine did not run as vertex records, only one
/// call in [`RECORDS_RETRY_EVERY`] tries again (an engine without a record path, or a kernel
/// still compiling, stepped aside or refused): in the float24 modes a try converts the
/// attributes into records first, which the plane layout then does again.
const RECORDS_TRIES: u32 = 8;
/// See [`RECORDS_TRIES`].
const RECORDS_RETRY_EVERY: u32 = 64;

impl EngineHandle {
    fn new(engine: Arc<dyn ShaderEngine>, layout: BatchLayout) -> EngineHandle {
        EngineHandle {
            stage: engine.program().stage,
            precision: engine.config().precision,
            engine,
            layout,
            vertex: OnceLock::new(),
            records_declined: AtomicU32::new(0),
        }
    }

    /// Whether a batch call should offer the engine vertex records: always while it runs them,
    /// now and then when it has not for a while.
    #[inline]
    pub fn records_worth_trying(&self) -> bool {
        let declined = self.records_declined.load(Ordering::Relaxed);
        declined < RECORDS_TRIES || declined.is_multiple_of(RECORDS_RETRY_EVERY)
    }

    /// Batch calls in a row that the engine did not run as vertex records (for tests).
    #[cfg(test)]
    pub fn records_declined(&self) -> u32 {
        self.records_declined.load(Ordering::Relaxed)
    }

    /// Notes whether the engine ran a batch call's vertex records.
    #[inline]
    pub fn note_records(&self, ran: bool) {
        let declined = self.records_declined.load(Ordering::Relaxed);
        let next = if ran { 0 } else { declined.wrapping_add(1) };
        if next != declined {
            self.records_declined.store(next, Ordering::Relaxed);
        }
    }

    /// The engine to run one vertex on: the settled runner, or the engine while none is.
    #[inline]
    pub fn vertex_engine(&self) -> &dyn ShaderEngine {
        match self.vertex.get() {
            Some(runner) => runner.as_ref(),
            None => self.settle_vertex_engine(),
        }
    }

    /// [`vertex_engine`](Self::vertex_engine) before the runner is settled.
    #[cold]
    fn settle_vertex_engine(&self) -> &dyn ShaderEngine {
        match Hosted(&*self.engine).vertex_runner() {
            VertexRunner::Itself => self.vertex.get_or_init(|| self.engine.clone()).as_ref(),
            VertexRunner::Inner(runner) => self.vertex.get_or_init(|| runner).as_ref(),
            VertexRunner::Unsettled => self.engine.as_ref(),
        }
    }
}

/// `picajit_program`: program memory to upload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// `code_len` code words (NULL allowed when 0).
    pub code: *const u32,
    /// At most 4096.
    pub code_len: usize,
    /// `opdesc_len` operand descriptors (NULL allowed when 0).
    pub opdescs: *const u32,
    /// At most 128.
    pub opdesc_len: usize,
    /// The entry point (a word address below 4096).
    pub entry: u32,
    /// `PICAJIT_STAGE_*`.
    pub stage: u32,
    /// The output registers sent on (bit n = on).
    pub output_mask: u16,
}

/// `picajit_config`: how to prepare a program; all zero is the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// `PICAJIT_ENGINE_*` (0: the library's best).
    pub engine: u32,
    /// `PICAJIT_PRECISION_*` (0: `f24`).
    pub precision: u32,
    /// The most instructions one invocation may execute (0: 2^20).
    pub instruction_budget: u64,
}

/// `picajit_layout`: what a batch of an engine's program carries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Layout {
    /// The v-registers the program can read (bit n = vn): a batch's input planes must have them.
    pub input_mask: u16,
    /// The o-registers it sends on (bit n = on): a batch's output planes may have any of them.
    pub output_mask: u16,
    /// `PICAJIT_STAGE_*`.
    pub stage: u32,
}

/// `picajit_dvle_info`: one DVLE of a SHBIN blob.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DvleInfo {
    /// `PICAJIT_STAGE_*`.
    pub stage: u32,
    /// The entry point.
    pub entry: u32,
    /// The output registers an engine of it sends on.
    pub output_mask: u16,
}

/// `picajit_cache_stats`: what a cache has done.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheStats {
    /// Requests served from the cache.
    pub hits: u64,
    /// Requests that found nothing.
    pub misses: u64,
    /// Compilations run.
    pub compiles: u64,
    /// Compilations that failed.
    pub compile_errors: u64,
    /// Programs evicted.
    pub evictions: u64,
    /// Requests whose key matched another program.
    pub collisions: u64,
    /// Programs held now.
    pub programs: u64,
    /// The most programs held at once.
    pub capacity: u64,
}

fn config_of(config: &Config) -> Result<(crate::engine::EngineKind, ExecConfig), CapiError> {
    let kind = engine_kind(config.engine).ok_or_else(|| {
        CapiError::argument(
            "config->engine",
            format!("{} is not a PICAJIT_ENGINE_* value", config.engine),
        )
    })?;
    let precision = precision(config.precision).ok_or_else(|| {
        CapiError::argument(
            "config->precision",
            format!("{} is not a PICAJIT_PRECISION_* value", config.precision),
        )
    })?;
    let instruction_budget = match config.instruction_budget {
        0 => DEFAULT_INSTRUCTION_BUDGET,
        n => n,
    };
    Ok((
        kind,
        ExecConfig {
            precision,
            instruction_budget,
        },
    ))
}

/// Prepares `program` under `config` (NULL: defaults), through `cache` when it is not null.
///
/// # Safety
///
/// `config` and `cache` are null or valid; `out` is valid for a write.
unsafe fn create_engine(
    program: ShaderProgram,
    config: *const Config,
    cache: *const ProgramCacheHandle,
    out: *mut *mut EngineHandle,
) -> Result<i32, CapiError> {
    let config = if config.is_null() {
        Config::default()
    } else {
        // SAFETY: not null; valid by the caller's contract.
        *unsafe { ptr_ref(config, "config") }?
    };
    let (kind, config) = config_of(&config)?;
    let (engine, layout): (Arc<dyn ShaderEngine>, BatchLayout) = if cache.is_null() {
        let layout = BatchLayout::of(&program);
        (Arc::from(prepare(kind, program, config)?), layout)
    } else {
        // SAFETY: not null; a live cache handle by the caller's contract.
        let cache = unsafe { ptr_ref(cache, "cache") }?;
        let engine = prepare_cached(&cache.cache, kind, &program, config)?;
        let layout = cache.layout_of(&engine);
        (engine, layout)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { store_handle(out, "out", EngineHandle::new(engine, layout)) }
}

/// Creates a program cache holding at most `capacity` programs (0: the default, 128) in `*out`.
///
/// # Safety
///
/// `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_cache_create(
    capacity: usize,
    out: *mut *mut ProgramCacheHandle,
) -> i32 {
    guard("picajit_cache_create", || {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(DEFAULT_CAPACITY);
        let cache = ProgramCacheHandle::new(Arc::new(ProgramCache::new(capacity)));
        // SAFETY: `out` is null or valid for a write (this function's contract).
        unsafe { store_handle(out, "out", cache) }
    })
}

/// Frees a cache handle (NULL is ignored). Engines prepared through it stay valid.
///
/// # Safety
///
/// `cache` is null or a live cache handle, used by no other call during or after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_cache_free(cache: *mut ProgramCacheHandle) {
    // SAFETY: null or a live handle of this type (this function's contract).
    guard_infallible("picajit_cache_free", (), || unsafe { free_handle(cache) })
}

/// Writes the statistics of `cache` to `*out`.
///
/// # Safety
///
/// `cache` is null or a live cache handle; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_cache_get_stats(
    cache: *const ProgramCacheHandle,
    out: *mut CacheStats,
) -> i32 {
    guard("picajit_cache_get_stats", || {
        // SAFETY: null or a live handle (this function's contract).
        let cache = unsafe { ptr_ref(cache, "cache") }?;
        // SAFETY: null or valid for a write (this function's contract).
        let out = unsafe { ptr_mut(out, "out") }?;
        let stats = cache.cache.stats();
        *out = CacheStats {
            hits: stats.hits,
            misses: stats.misses,
            compiles: stats.compiles,
            compile_errors: stats.compile_errors,
            evictions: stats.evictions,
            collisions: stats.collisions,
            programs: stats.programs as u64,
            capacity: stats.capacity as u64,
        };
        Ok(OK)
    })
}

/// Drops every program `cache` holds (engines handed out stay valid).
///
/// # Safety
///
/// `cache` is null or a live cache handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_cache_clear(cache: *const ProgramCacheHandle) -> i32 {
    guard("picajit_cache_clear", || {
        // SAFETY: null or a live handle (this function's contract).
        let cache = unsafe { ptr_ref(cache, "cache") }?;
        cache.cache.clear();
        Ok(OK)
    })
}

/// Prepares the program `program` describes with the engine and settings of `config` (NULL:
/// defaults), through `cache` when it is not NULL, and stores the engine in `*out`.
///
/// # Safety
///
/// `program` is null or valid, its `code` and `opdescs` valid for their lengths; `config` and
/// `cache` are null or valid; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_create(
    program: *const Program,
    config: *const Config,
    cache: *const ProgramCacheHandle,
    out: *mut *mut EngineHandle,
) -> i32 {
    guard("picajit_engine_create", || {
        // SAFETY: null or valid (this function's contract).
        let program = unsafe { shader_program(program) }?;
        // SAFETY: forwarded from this function's contract.
        unsafe { create_engine(program, config, cache, out) }
    })
}

/// The program a `picajit_program` uploads.
///
/// # Safety
///
/// `program` is null or valid, its code and descriptors valid for their lengths when not null.
pub(super) unsafe fn shader_program(program: *const Program) -> Result<ShaderProgram, CapiError> {
    // SAFETY: null or valid (this function's contract).
    let program = unsafe { ptr_ref(program, "program") }?;
    // SAFETY: valid for `code_len` words when not null (this function's contract).
    let code = unsafe { slice_of(program.code, program.code_len, "program->code") }?;
    // SAFETY: valid for `opdesc_len` words when not null (this function's contract).
    let opdescs = unsafe { slice_of(program.opdescs, program.opdesc_len, "program->opdescs") }?;
    let kind = stage(program.stage).ok_or_else(|| {
        CapiError::argument(
            "program->stage",
            format!("{} is not a PICAJIT_STAGE_* value", program.stage),
        )
    })?;
    Ok(ShaderProgram::new(
        code,
        opdescs,
        program.entry,
        kind,
        program.output_mask,
    )?)
}

/// Prepares DVLE `dvle` of a parsed SHBIN blob (its code, descriptors, entry point, stage and
/// output registers) like [`picajit_engine_create`].
///
/// # Safety
///
/// `shbin` is null or a live SHBIN handle; `config` and `cache` are null or valid; `out` is
/// null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_create_from_shbin(
    shbin: *const ShbinHandle,
    dvle: u32,
    config: *const Config,
    cache: *const ProgramCacheHandle,
    out: *mut *mut EngineHandle,
) -> i32 {
    guard("picajit_engine_create_from_shbin", || {
        // SAFETY: null or a live handle (this function's contract).
        let shbin = unsafe { ptr_ref(shbin, "shbin") }?;
        let program = ShaderProgram::from_shbin(&shbin.0, dvle as usize)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { create_engine(program, config, cache, out) }
    })
}

/// Frees an engine handle (NULL is ignored).
///
/// # Safety
///
/// `engine` is null or a live engine handle, used by no other call during or after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_free(engine: *mut EngineHandle) {
    // SAFETY: null or a live handle of this type (this function's contract).
    guard_infallible("picajit_engine_free", (), || unsafe { free_handle(engine) })
}

/// Writes which input registers the engine's program reads and which outputs it sends on.
///
/// # Safety
///
/// `engine` is null or a live engine handle; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_layout(
    engine: *const EngineHandle,
    out: *mut Layout,
) -> i32 {
    guard("picajit_engine_layout", || {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or valid for a write (this function's contract).
        let out = unsafe { ptr_mut(out, "out") }?;
        *out = Layout {
            input_mask: engine.layout.inputs.0,
            output_mask: engine.layout.outputs.0,
            stage: engine.engine.program().stage.code() as u32,
        };
        Ok(OK)
    })
}

/// The name of the engine that runs the program (`"interp"`, `"jit"`), a static NUL-terminated
/// string; `""` for NULL.
///
/// # Safety
///
/// `engine` is null or a live engine handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_name(engine: *const EngineHandle) -> *const c_char {
    guard_infallible("picajit_engine_name", c"".as_ptr(), || {
        // SAFETY: null or a live handle (this function's contract).
        match unsafe { ptr_ref(engine, "engine") } {
            Ok(engine) => static_c_name(engine.engine.name()),
            Err(_) => c"".as_ptr(),
        }
    })
}

/// A NUL-terminated copy of an engine name that lives as long as the program: one copy per
/// distinct name (there are as many as engine kinds).
fn static_c_name(name: &'static str) -> *const c_char {
    static NAMES: Mutex<Vec<(&'static str, &'static CStr)>> = Mutex::new(Vec::new());
    let mut names = NAMES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, c_name)) = names.iter().find(|(known, _)| *known == name) {
        return c_name.as_ptr();
    }
    let c_name: &'static CStr = Box::leak(
        CString::new(name.replace('\0', ""))
            .unwrap_or_default()
            .into_boxed_c_str(),
    );
    names.push((name, c_name));
    c_name.as_ptr()
}

/// Parses a SHBIN blob of `len` bytes into `*out` (the blob is copied; it may be freed after).
///
/// # Safety
///
/// `data` is null or valid for `len` bytes; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_shbin_parse(
    data: *const u8,
    len: usize,
    out: *mut *mut ShbinHandle,
) -> i32 {
    guard("picajit_shbin_parse", || {
        if data.is_null() {
            return Err(CapiError::Null { argument: "data" });
        }
        // SAFETY: not null; valid for `len` bytes (this function's contract).
        let bytes = unsafe { slice_of(data, len, "data") }?;
        let shbin = crate::shbin::parse(bytes)?;
        // SAFETY: null or valid for a write (this function's contract).
        unsafe { store_handle(out, "out", ShbinHandle(shbin)) }
    })
}

/// Frees a SHBIN handle (NULL is ignored). Engines made from it stay valid.
///
/// # Safety
///
/// `shbin` is null or a live SHBIN handle, used by no other call during or after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_shbin_free(shbin: *mut ShbinHandle) {
    // SAFETY: null or a live handle of this type (this function's contract).
    guard_infallible("picajit_shbin_free", (), || unsafe { free_handle(shbin) })
}

/// Writes the number of DVLEs (entry points) of a parsed SHBIN blob to `*out`.
///
/// # Safety
///
/// `shbin` is null or a live SHBIN handle; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_shbin_dvle_count(shbin: *const ShbinHandle, out: *mut u32) -> i32 {
    guard("picajit_shbin_dvle_count", || {
        // SAFETY: null or a live handle (this function's contract).
        let shbin = unsafe { ptr_ref(shbin, "shbin") }?;
        // SAFETY: null or valid for a write (this function's contract).
        let out = unsafe { ptr_mut(out, "out") }?;
        *out = shbin.0.dvles.len() as u32;
        Ok(OK)
    })
}

/// Writes where a parsed SHBIN blob's program memory is: its code words (`*code`, `*code_len`)
/// and operand descriptors (the first word of each entry: `*opdescs`, `*opdesc_len`), shared
/// by its DVLEs. The arrays belong to the handle and live until it is freed: an emulator that
/// uploads words itself reads them from there. An out argument may be NULL (not written).
///
/// # Safety
///
/// `shbin` is null or a live SHBIN handle; each out argument is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_shbin_program(
    shbin: *const ShbinHandle,
    code: *mut *const u32,
    code_len: *mut usize,
    opdescs: *mut *const u32,
    opdesc_len: *mut usize,
) -> i32 {
    guard("picajit_shbin_program", || {
        // SAFETY: null or a live handle (this function's contract).
        let shbin = &unsafe { ptr_ref(shbin, "shbin") }?.0;
        let place = |out: *mut *const u32, words: &[u32]| {
            if !out.is_null() {
                // SAFETY: not null; valid for a write (this function's contract).
                unsafe { *out = words.as_ptr() };
            }
        };
        let count = |out: *mut usize, len: usize| {
            if !out.is_null() {
                // SAFETY: not null; valid for a write (this function's contract).
                unsafe { *out = len };
            }
        };
        place(code, &shbin.code);
        count(code_len, shbin.code.len());
        place(opdescs, &shbin.opdescs);
        count(opdesc_len, shbin.opdescs.len());
        Ok(OK)
    })
}

/// Writes the stage, entry point and output registers of DVLE `dvle` to `*out`.
///
/// # Safety
///
/// `shbin` is null or a live SHBIN handle; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_shbin_dvle_info(
    shbin: *const ShbinHandle,
    dvle: u32,
    out: *mut DvleInfo,
) -> i32 {
    guard("picajit_shbin_dvle_info", || {
        // SAFETY: null or a live handle (this function's contract).
        let shbin = unsafe { ptr_ref(shbin, "shbin") }?;
        // SAFETY: null or valid for a write (this function's contract).
        let out = unsafe { ptr_mut(out, "out") }?;
        let program = ShaderProgram::from_shbin(&shbin.0, dvle as usize)?;
        *out = DvleInfo {
            stage: program.stage.code() as u32,
            entry: program.entry as u32,
            output_mask: program.output_mask,
        };
        Ok(OK)
    })
}
