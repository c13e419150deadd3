/*
 * picajit.h: the C ABI of picajit, exact float24 execution of PICA200 (Nintendo 3DS) vertex
 * and geometry shaders. C99 and C++.
 *
 * Kept by hand next to src/capi/ (jit-tests/c_abi.rs checks that both list the same functions
 * with the same number of parameters, and that the structs have the same sizes). The guide is
 * docs/c-abi.md: ownership, threading, the error model and the plane layout.
 *
 * Link the static library (target/release/libpicajit.a, with -lpthread -ldl -lm) or the shared
 * one (libpicajit.so); both come out of `cargo build --release`.
 *
 * Conventions:
 *  - A fallible function returns int32_t: 0 (or a count, where documented) on success, a
 *    negative PICAJIT_ERROR_* on failure. picajit_last_error_message() then says what failed and
 *    where. A NULL pointer, a bad index, mask, stride or capacity is an error, never a crash.
 *  - Handles are opaque. Each *_create function stores a new handle in *out; each has a *_free
 *    function (NULL is ignored).
 *  - Vectors are float[4] in the order x, y, z, w. The sixteen registers of an invocation are
 *    float[16][4] (register n at index n).
 *  - A zeroed picajit_config is the defaults.
 */
#ifndef PICAJIT_H
#define PICAJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PICAJIT_API
#define PICAJIT_API
#endif

/* The ABI version this header describes; compare with picajit_abi_version(). */
#define PICAJIT_ABI_VERSION 1u

/* ---- Status codes ------------------------------------------------------------------------ */

#define PICAJIT_OK 0
/* A required pointer was NULL. */
#define PICAJIT_ERROR_NULL_POINTER (-1)
/* An argument is out of range or misaligned, a handle is of the wrong stage, or a batch's
 * masks, strides, counts or capacities do not fit. */
#define PICAJIT_ERROR_BAD_ARGUMENT (-2)
/* The code or descriptors do not fit program memory, or the entry point is outside it. */
#define PICAJIT_ERROR_BAD_PROGRAM (-3)
/* A malformed SHBIN blob, or a DVLE index the blob does not have. */
#define PICAJIT_ERROR_BAD_SHBIN (-4)
/* The engine could not prepare the program (the JIT: an environment problem). */
#define PICAJIT_ERROR_COMPILE (-5)
/* The library panicked (a bug, please report it); the panic was caught. */
#define PICAJIT_ERROR_PANIC (-6)
/* The target cannot take this program (a geometry shader translated to GLSL ES 3.00, which
 * has no geometry shaders). */
#define PICAJIT_ERROR_UNSUPPORTED (-7)
/* Execution errors of an invocation (docs/execution-model.md §6.4), -16 to -31. */
#define PICAJIT_ERROR_BREAK_OUTSIDE_LOOP (-16) /* BREAK with an empty loop stack */
#define PICAJIT_ERROR_INSTRUCTION_BUDGET (-17) /* more instructions than the budget */
#define PICAJIT_ERROR_INVALID_EMIT_VERTEX (-18) /* EMIT with SETEMIT vertex id 3 */
#define PICAJIT_ERROR_INTERNAL (-19)           /* an engine bug, reported instead of a crash */
#define PICAJIT_IS_EXEC_ERROR(status) ((status) <= -16 && (status) >= -31)

/* ---- Enumerations (plain uint32_t values, so new ones can be added) ---------------------- */

/* Engines. 0 is the one the library recommends (today PICAJIT_ENGINE_AUTO); new engines get new numbers,
 * and a number the library does not know is PICAJIT_ERROR_BAD_ARGUMENT. */
#define PICAJIT_ENGINE_BEST 0u
#define PICAJIT_ENGINE_INTERP 1u /* the reference interpreter */
#define PICAJIT_ENGINE_JIT 2u    /* the Cranelift JIT, one vertex at a time */
#define PICAJIT_ENGINE_SOA_JIT 3u /* the structure-of-arrays JIT for batches (docs/batches.md) */
#define PICAJIT_ENGINE_VINTERP 4u /* the vectorised interpreter: nothing to compile */
#define PICAJIT_ENGINE_AUTO 5u    /* vinterp at once, the SoA JIT compiled in the background once hot */

/* Where an engine's background compiles stand (picajit_engine_compile_status). */
#define PICAJIT_COMPILE_READY 0u   /* everything compiled, or nothing to compile */
#define PICAJIT_COMPILE_FAILED 1u  /* a compile failed: the engine runs without it, same bits */
#define PICAJIT_COMPILE_COLD 2u    /* a compile waits for the program to be hot */
#define PICAJIT_COMPILE_RUNNING 3u /* a compile is running on a background thread */

/* Precision modes (docs/execution-model.md §2). */
#define PICAJIT_PRECISION_F24 0u     /* truncate to 16 mantissa bits (the default) */
#define PICAJIT_PRECISION_F24_RNE 1u /* round to nearest even at 16 mantissa bits */
#define PICAJIT_PRECISION_F32 2u     /* keep f32 results */

/* Shader stages. */
#define PICAJIT_STAGE_VERTEX 0u
#define PICAJIT_STAGE_GEOMETRY 1u

/* Languages of translations for host GPUs (docs/gpu-shaders.md). */
#define PICAJIT_LANGUAGE_GLSL330 0u    /* GLSL 3.30 core (desktop OpenGL 3.3) */
#define PICAJIT_LANGUAGE_GLSL_ES300 1u /* GLSL ES 3.00 (OpenGL ES 3.0, Android) */
#define PICAJIT_LANGUAGE_GLSL450 2u    /* GLSL 4.50 core, precise on every result */
#define PICAJIT_LANGUAGE_GLSL_ES320 3u /* GLSL ES 3.20, precise on every result */
#define PICAJIT_LANGUAGE_SPIRV 4u      /* SPIR-V 1.0 for Vulkan: words, not text */

/* How a translation's outputs appear. */
#define PICAJIT_OUTPUTS_VARYINGS 0u /* out vec4 oN; and the translation's own main */
#define PICAJIT_OUTPUTS_GLOBALS 1u  /* vec4 oN; and an entry function the caller's main calls */

/* The form a translation's control flow took. */
#define PICAJIT_FORM_DISPATCH 0u   /* the dispatch loop over runs (docs/gpu-shaders.md) */
#define PICAJIT_FORM_STRUCTURED 1u /* if/else and loops */

/* The bytes of a translation's uniform block (std140): c0-c95, i0-i3, b, zero. */
#define PICAJIT_UNIFORM_BLOCK_BYTES 1616u

/* ---- Handles ----------------------------------------------------------------------------- */

/* A bounded cache of prepared programs: thread-safe, share it between threads. */
typedef struct picajit_cache picajit_cache;
/* A parsed SHBIN blob: immutable, may be read from several threads. */
typedef struct picajit_shbin picajit_shbin;
/* A prepared program: immutable, may run on several threads at once. */
typedef struct picajit_engine picajit_engine;
/* Float, int and bool uniforms: read by any number of runs at once, written by one thread
 * while nothing reads it. */
typedef struct picajit_uniforms picajit_uniforms;
/* The state a geometry shader keeps across the invocations of one draw: one thread at a time. */
typedef struct picajit_geometry_state picajit_geometry_state;
/* A program translated for host GPUs, with its interface: immutable. */
typedef struct picajit_translation picajit_translation;

/* ---- Structs ----------------------------------------------------------------------------- */

/* Program memory to upload. */
typedef struct picajit_program {
    const uint32_t *code;    /* code_len instruction words (NULL when code_len is 0) */
    size_t code_len;         /* at most 4096; memory past it reads 0 */
    const uint32_t *opdescs; /* opdesc_len operand descriptors (NULL when opdesc_len is 0) */
    size_t opdesc_len;       /* at most 128 */
    uint32_t entry;          /* the entry point, a word address below 4096 */
    uint32_t stage;          /* PICAJIT_STAGE_* */
    uint16_t output_mask;    /* the output registers sent on (bit n = on) */
} picajit_program;

/* How to prepare a program. All zero: the best engine, f24, a budget of 2^20. */
typedef struct picajit_config {
    uint32_t engine;             /* PICAJIT_ENGINE_* */
    uint32_t precision;          /* PICAJIT_PRECISION_* */
    uint64_t instruction_budget; /* most instructions per invocation; 0: 2^20 */
} picajit_config;

/* What a batch of an engine's program carries. */
typedef struct picajit_layout {
    uint16_t input_mask;  /* v-registers the program can read: a batch's inputs must have them */
    uint16_t output_mask; /* o-registers it sends on: a batch's outputs may have any of them */
    uint32_t stage;       /* PICAJIT_STAGE_* */
} picajit_layout;

/* One DVLE (entry point) of a SHBIN blob. */
typedef struct picajit_dvle_info {
    uint32_t stage;       /* PICAJIT_STAGE_* */
    uint32_t entry;       /* the entry point */
    uint16_t output_mask; /* the output registers an engine of it sends on */
} picajit_dvle_info;

/* What to translate for. All zero (or NULL): f24, GLSL 3.30, varyings, no comments, a budget
 * of 2^20, entry main, block pica_uniforms. */
typedef struct picajit_translate_options {
    uint32_t precision;          /* PICAJIT_PRECISION_* */
    uint32_t language;           /* PICAJIT_LANGUAGE_* */
    uint32_t outputs;            /* PICAJIT_OUTPUTS_* */
    uint32_t comments;           /* non-zero: each statement's address and instruction */
    uint64_t instruction_budget; /* most instructions per invocation; 0: 2^20 */
    const char *entry;      /* the entry's name (NULL: main; not main with OUTPUTS_GLOBALS) */
    const char *block_name; /* the uniform block's name (NULL: pica_uniforms) */
} picajit_translate_options;

/* What a translation presents to the code around it (offsets in bytes into the block). */
typedef struct picajit_translation_info {
    uint64_t source_bytes; /* the source's length (GLSL: without its NUL) */
    uint32_t form;         /* PICAJIT_FORM_* */
    uint32_t block_bytes;  /* PICAJIT_UNIFORM_BLOCK_BYTES */
    uint32_t float_offset; /* c0-c95: x, y, z, w as f32 bits, 16 bytes each */
    uint32_t int_offset;   /* i0-i3: x, y, z, w one byte per 32-bit word, 16 bytes each */
    uint32_t bool_offset;  /* a 32-bit word, bit n = bn */
    uint32_t zero_offset;  /* a 32-bit word that must be 0 */
    uint32_t input_mask;   /* bit n: the translation declares layout(location = n) in vec4 vN */
    uint32_t output_mask;  /* bit n: it writes oN (+0 until written) */
    uint32_t stage;        /* PICAJIT_STAGE_* */
    uint32_t state_block_bytes; /* geometry: the pica_geometry_state block's size; 0 vertex */
    uint32_t max_vertices; /* geometry: the shader's max_vertices (whole triangles); 0 vertex */
} picajit_translation_info;

/* What a cache has done. */
typedef struct picajit_cache_stats {
    uint64_t hits;           /* requests served from the cache */
    uint64_t misses;         /* requests that found nothing (each compiles or waits) */
    uint64_t compiles;       /* compilations run */
    uint64_t compile_errors; /* compilations that failed (not cached) */
    uint64_t evictions;      /* programs evicted (least recently used first) */
    uint64_t collisions;     /* requests whose key matched another program (compiled uncached) */
    uint64_t programs;       /* programs held now */
    uint64_t capacity;       /* the most programs held at once */
} picajit_cache_stats;

/* a0, aL and cmp at the end of an invocation. */
typedef struct picajit_flow {
    int32_t a0[2];       /* a0.x, a0.y */
    int32_t al;          /* aL */
    uint8_t cmp[2];      /* cmp.x, cmp.y: 0 or 1 */
    uint8_t reserved[2]; /* 0 */
} picajit_flow;

/* One failed vertex of a batch. */
typedef struct picajit_vertex_error {
    uint32_t vertex;   /* index in the batch */
    int32_t code;      /* a PICAJIT_ERROR_* execution status */
    uint16_t pc;       /* the address where it failed */
    uint16_t reserved; /* 0 */
} picajit_vertex_error;

/*
 * The caller's buffers for one batch of vertex-shader invocations. Planes: for each register of
 * the mask, in register order, four planes (x, y, z, w) of `count` floats; plane k starts at
 * `k * stride` floats from the buffer's start, so a buffer spans (planes - 1) * stride + count
 * floats. The buffers must not overlap.
 */
typedef struct picajit_batch {
    size_t count;                 /* vertices, at most INT32_MAX */
    const float *inputs;          /* input planes */
    uint16_t input_mask;          /* registers present (bit n = vn): every one the program reads */
    size_t input_stride;          /* floats between input planes, at least count */
    float *outputs;               /* output planes */
    uint16_t output_mask;         /* registers wanted (bit n = on): only ones the program sends */
    size_t output_stride;         /* floats between output planes, at least count */
    picajit_flow *flow;           /* NULL, or count entries: each vertex's final a0/aL/cmp */
    picajit_vertex_error *errors; /* error_capacity entries (NULL when it is 0) */
    size_t error_capacity;
} picajit_batch;

/* One batch in an emulator's own layout: each vertex its sixteen registers of four floats. Only
 * the registers of the masks are read and written; a vertex's other outputs are left as they
 * are. */
typedef struct picajit_vertices {
    size_t count;                 /* vertices, at most INT32_MAX */
    const float (*inputs)[16][4]; /* count vertices' v0-v15 */
    uint16_t input_mask;          /* registers read (bit n = vn): every one the program reads */
    float (*outputs)[16][4];      /* count vertices' o0-o15 */
    uint16_t output_mask;         /* registers written (bit n = on): only ones the program sends */
    picajit_flow *flow;           /* NULL, or count entries: each vertex's final a0/aL/cmp */
    picajit_vertex_error *errors; /* error_capacity entries (NULL when it is 0) */
    size_t error_capacity;
} picajit_vertices;

/* Receives a vertex sent by EMIT: the SETEMIT state it used (vertex id 0-2, primitive and
 * winding flags, 0 or 1) and the emitting bank's o0-o15 (those of the output mask matter). */
typedef void (*picajit_vertex_fn)(void *user, uint32_t vertex_id, uint32_t primitive,
                                  uint32_t winding, const float outputs[16][4]);
/* Receives a triangle, right after its vertex: the three vertex slots in slot order 0, 1, 2.
 * With winding set, the primitive assembler takes them as (slot 1, slot 0, slot 2). */
typedef void (*picajit_primitive_fn)(void *user, uint32_t winding, const float slots[3][16][4]);

/* Where a geometry-shader invocation's emissions go, as they are emitted. The callbacks must
 * return normally (no C++ exception, no longjmp) and must not call picajit on the same state. */
typedef struct picajit_emit_callbacks {
    void *user;                     /* passed to each callback */
    picajit_vertex_fn vertex;       /* NULL: ignored */
    picajit_primitive_fn primitive; /* NULL: ignored */
} picajit_emit_callbacks;

/* ---- Version and errors ------------------------------------------------------------------ */

/* The library version ("0.1.0"), static. */
PICAJIT_API const char *picajit_version(void);
/* The ABI version of the library; PICAJIT_ABI_VERSION is the header's. */
PICAJIT_API uint32_t picajit_abi_version(void);
/* The message of the last failed call on this thread ("" if none failed): names the function,
 * the argument or field, and the problem. Valid until the next failing call on this thread. */
PICAJIT_API const char *picajit_last_error_message(void);
/* The name of a status ("PICAJIT_ERROR_BAD_ARGUMENT"), static; "PICAJIT_OK" for 0 and more. */
PICAJIT_API const char *picajit_status_name(int32_t status);

/* ---- Program cache ----------------------------------------------------------------------- */

/* A cache of at most `capacity` prepared programs (0: 128). An identical upload (code,
 * descriptors, entry, stage, output mask, engine, precision, budget) through it is not
 * compiled again. */
PICAJIT_API int32_t picajit_cache_create(size_t capacity, picajit_cache **out);
/* Engines prepared through the cache stay valid after it is freed. */
PICAJIT_API void picajit_cache_free(picajit_cache *cache);
PICAJIT_API int32_t picajit_cache_get_stats(const picajit_cache *cache,
                                            picajit_cache_stats *out);
/* Drops every program the cache holds (engines handed out stay valid). */
PICAJIT_API int32_t picajit_cache_clear(const picajit_cache *cache);

/* ---- SHBIN blobs ------------------------------------------------------------------------- */

/* Parses a SHBIN blob (copied: the bytes may be freed afterwards). A malformed blob is
 * PICAJIT_ERROR_BAD_SHBIN with a message naming the field and its byte offset. */
PICAJIT_API int32_t picajit_shbin_parse(const uint8_t *data, size_t len, picajit_shbin **out);
/* Engines made from the blob stay valid after it is freed. */
PICAJIT_API void picajit_shbin_free(picajit_shbin *shbin);
PICAJIT_API int32_t picajit_shbin_dvle_count(const picajit_shbin *shbin, uint32_t *out);
PICAJIT_API int32_t picajit_shbin_dvle_info(const picajit_shbin *shbin, uint32_t dvle,
                                            picajit_dvle_info *out);
/* The blob's program memory, shared by its DVLEs: its code words and operand descriptors (the
 * first word of each entry), owned by the handle and valid until it is freed. For an emulator
 * that uploads words itself. Any out argument may be NULL. */
PICAJIT_API int32_t picajit_shbin_program(const picajit_shbin *shbin, const uint32_t **code,
                                          size_t *code_len, const uint32_t **opdescs,
                                          size_t *opdesc_len);

/* ---- Engines ----------------------------------------------------------------------------- */

/* Prepares a program with the engine and settings of `config` (NULL: defaults), through
 * `cache` when it is not NULL (then an identical earlier upload is not compiled again). */
PICAJIT_API int32_t picajit_engine_create(const picajit_program *program,
                                          const picajit_config *config,
                                          const picajit_cache *cache, picajit_engine **out);
/* The same for DVLE `dvle` of a parsed SHBIN blob (its code, descriptors, entry point, stage
 * and output registers). Its constants go to uniforms with picajit_uniforms_apply_constants. */
PICAJIT_API int32_t picajit_engine_create_from_shbin(const picajit_shbin *shbin, uint32_t dvle,
                                                     const picajit_config *config,
                                                     const picajit_cache *cache,
                                                     picajit_engine **out);
PICAJIT_API void picajit_engine_free(picajit_engine *engine);
/* Which input registers the program reads and which outputs it sends on: size planes by it. */
PICAJIT_API int32_t picajit_engine_layout(const picajit_engine *engine, picajit_layout *out);
/* The engine running the program ("interp", "jit"), static; "" for NULL. */
PICAJIT_API const char *picajit_engine_name(const picajit_engine *engine);
/* Where the engine's background compiles stand for calls with `uniforms` (the auto engine
 * compiles a batch kernel per bool and int uniforms): PICAJIT_COMPILE_* in `*status`. When it
 * is PICAJIT_COMPILE_FAILED, picajit_last_error_message() says why. */
PICAJIT_API int32_t picajit_engine_compile_status(const picajit_engine *engine,
                                                  const picajit_uniforms *uniforms,
                                                  uint32_t *status);
/* Starts what the engine left to compile for calls with `uniforms` (cold compiles too) and
 * waits for it, so that the next call runs at full speed; returns at once when nothing is left. */
PICAJIT_API int32_t picajit_engine_wait_compiled(const picajit_engine *engine,
                                                 const picajit_uniforms *uniforms);

/* ---- Uniforms (docs/execution-model.md §7) ----------------------------------------------- */

/* All zero. */
PICAJIT_API int32_t picajit_uniforms_create(picajit_uniforms **out);
PICAJIT_API void picajit_uniforms_free(picajit_uniforms *uniforms);
PICAJIT_API int32_t picajit_uniforms_reset(picajit_uniforms *uniforms);
/* c`index` (0-95) from four floats x, y, z, w, converted as the float32 upload mode converts
 * them under `precision` (PICAJIT_PRECISION_*): the engine's. A run on an engine of another
 * precision fails (PICAJIT_ERROR_BAD_ARGUMENT), and so does converting under a second mode
 * before picajit_uniforms_reset; float24 words and constants are exact and fit every mode. */
PICAJIT_API int32_t picajit_uniforms_set_float(picajit_uniforms *uniforms, uint32_t index,
                                               const float xyzw[4], uint32_t precision);
/* c`first` to c`first + count - 1` (at most c95) from `count` vectors, as set_float sets one:
 * a whole upload in one call. */
PICAJIT_API int32_t picajit_uniforms_set_floats(picajit_uniforms *uniforms, uint32_t first,
                                                size_t count, const float (*xyzw)[4],
                                                uint32_t precision);
/* c`index` from the three words of the float24 upload format, exactly:
 * word0 = w<<8 | z>>16, word1 = (z & 0xFFFF)<<16 | y>>8, word2 = (y & 0xFF)<<24 | x. */
PICAJIT_API int32_t picajit_uniforms_set_float_f24_words(picajit_uniforms *uniforms,
                                                         uint32_t index,
                                                         const uint32_t words[3]);
/* c`first` to c`first + count - 1` from `count` groups of three float24-format words (what the
 * float-uniform FIFO received), exactly. */
PICAJIT_API int32_t picajit_uniforms_set_floats_f24_words(picajit_uniforms *uniforms,
                                                          uint32_t first, size_t count,
                                                          const uint32_t (*words)[3]);
/* c`index` from the four words of the float32 upload format, in FIFO order w, z, y, x (f32
 * bits), converted under `precision`. */
PICAJIT_API int32_t picajit_uniforms_set_float_f32_words(picajit_uniforms *uniforms,
                                                         uint32_t index,
                                                         const uint32_t words[4],
                                                         uint32_t precision);
/* c`first` to c`first + count - 1` from `count` groups of four float32-format words (w, z, y,
 * x each), converted under `precision` as set_float converts. */
PICAJIT_API int32_t picajit_uniforms_set_floats_f32_words(picajit_uniforms *uniforms,
                                                          uint32_t first, size_t count,
                                                          const uint32_t (*words)[4],
                                                          uint32_t precision);
/* The register value of c`index` (x, y, z, w). */
PICAJIT_API int32_t picajit_uniforms_get_float(const picajit_uniforms *uniforms, uint32_t index,
                                               float out[4]);
/* i`index` (0-3): x = iterations - 1, y = initial aL, z = aL increment, w unused. */
PICAJIT_API int32_t picajit_uniforms_set_int(picajit_uniforms *uniforms, uint32_t index,
                                             const uint8_t xyzw[4]);
/* i0-i3 at once, each as set_int sets one. */
PICAJIT_API int32_t picajit_uniforms_set_ints(picajit_uniforms *uniforms,
                                              const uint8_t ints[4][4]);
/* b0-b15, bit n = bn. */
PICAJIT_API int32_t picajit_uniforms_set_bools(picajit_uniforms *uniforms, uint16_t bools);
PICAJIT_API int32_t picajit_uniforms_get_bools(const picajit_uniforms *uniforms, uint16_t *out);
/* Applies the constant table of DVLE `dvle` over the current values (floats exactly). */
PICAJIT_API int32_t picajit_uniforms_apply_constants(picajit_uniforms *uniforms,
                                                     const picajit_shbin *shbin, uint32_t dvle);

/* ---- Running ----------------------------------------------------------------------------- */

/* One vertex-shader invocation from zeroed registers: o0-o15 to `outputs`, and a0/aL/cmp to
 * `*flow` when it is not NULL. The inputs are f32 attributes, converted to register values by
 * the engine's precision mode (f24: mantissa rounded to 16 bits, float24 range; f32: as they
 * are; docs/c-abi.md). Returns 0 or the execution status of a failed invocation (its outputs
 * and flow are then zero). */
PICAJIT_API int32_t picajit_run_vertex(const picajit_engine *engine,
                                       const picajit_uniforms *uniforms,
                                       const float inputs[16][4], float outputs[16][4],
                                       picajit_flow *flow);
/* A batch of vertex-shader invocations from the caller's input planes into its output planes.
 * The inputs are converted as picajit_run_vertex's are (the planes are only read). Returns the
 * number of failed vertices (0 or more; the first error_capacity of them are
 * described in `errors`, in vertex order; a failed vertex's outputs are +0), or a negative
 * status when the arguments are wrong (nothing is written then). Never writes outside the
 * extents the batch states. */
PICAJIT_API int32_t picajit_run_batch(const picajit_engine *engine,
                                      const picajit_uniforms *uniforms,
                                      const picajit_batch *batch);
/* The same in an emulator's own layout (picajit_vertices): each vertex's registers of
 * input_mask are read and converted as picajit_run_vertex's are, its registers of output_mask
 * written (+0 for a failed vertex), the others left as they are. Returns as picajit_run_batch.
 * Fastest with the layout's output_mask: the batch kernel then works on the vertices in place
 * (docs/c-abi.md, "The vertex layout of a batch"). */
PICAJIT_API int32_t picajit_run_vertices(const picajit_engine *engine,
                                         const picajit_uniforms *uniforms,
                                         const picajit_vertices *vertices);

/* A fresh geometry-shader state: the start of a draw. */
PICAJIT_API int32_t picajit_geometry_state_create(picajit_geometry_state **out);
PICAJIT_API void picajit_geometry_state_free(picajit_geometry_state *state);
PICAJIT_API int32_t picajit_geometry_state_reset(picajit_geometry_state *state);
/* One geometry-shader invocation on `state` with inputs v0-v15 (register values, as a vertex
 * shader's outputs are: taken as they are), delivering each emitted vertex
 * and triangle to `callbacks` (NULL: dropped) as it is emitted. Returns 0 or the execution
 * status of a failed invocation (the state keeps what it reached; what was emitted before the
 * failure has been delivered). */
PICAJIT_API int32_t picajit_run_geometry(const picajit_engine *engine,
                                         picajit_geometry_state *state,
                                         const picajit_uniforms *uniforms,
                                         const float inputs[16][4],
                                         const picajit_emit_callbacks *callbacks);

/* ---- Translations for host GPUs (docs/gpu-shaders.md) ------------------------------------ */

/* Translates a program to GLSL or SPIR-V that gives the interpreter's bits in the precision
 * asked for on any implementation whose float add and multiply are IEEE. A geometry shader
 * becomes a geometry shader (GLSL 3.30, 4.50, ES 3.20 and SPIR-V; PICAJIT_ERROR_UNSUPPORTED for
 * ES 3.00) that starts each invocation from the pica_geometry_state block (zeros: a draw's
 * start; SPIR-V: set 0, binding 1) and outputs each PICA triangle as a strip; in GLSL with
 * PICAJIT_OUTPUTS_GLOBALS its EMITs call the caller's `void <entry>_emit_vertex()`, which maps
 * o0-o15 and calls EmitVertex(). */
PICAJIT_API int32_t picajit_translate(const picajit_program *program,
                                      const picajit_translate_options *options,
                                      picajit_translation **out);
/* The same for DVLE `dvle` of a parsed SHBIN blob; comments name the registers it names. */
PICAJIT_API int32_t picajit_translate_shbin(const picajit_shbin *shbin, uint32_t dvle,
                                            const picajit_translate_options *options,
                                            picajit_translation **out);
PICAJIT_API void picajit_translation_free(picajit_translation *translation);
/* The source, alive until the translation is freed; "" for NULL: GLSL text with a NUL after
 * it, or a SPIR-V module's source_bytes bytes (4-byte aligned, for vkCreateShaderModule). */
PICAJIT_API const char *picajit_translation_source(const picajit_translation *translation);
PICAJIT_API int32_t picajit_translation_get_info(const picajit_translation *translation,
                                                 picajit_translation_info *out);
/* The uniform block's bytes for `uniforms` into `out` (at least PICAJIT_UNIFORM_BLOCK_BYTES of
 * `capacity`): upload them as the block's buffer. Returns the bytes written. */
PICAJIT_API int32_t picajit_uniforms_block(const picajit_uniforms *uniforms, uint8_t *out,
                                           size_t capacity);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PICAJIT_H */
