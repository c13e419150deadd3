/*
 * The C ABI from C: jit-tests/c_abi.rs compiles this file against include/picajit.h and the
 * static library, then runs it as
 *
 *     smoke LIT-TRANSFORM.SHBIN [NAME=SIZE ...]
 *
 * where each NAME=SIZE is the size of a #[repr(C)] struct on the Rust side (without them, the
 * sizes are not checked). It prints one line per check and exits 0 only when every check
 * passed. Expected values come from the programs'
 * instructions and exactly representable inputs, never from an earlier run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "picajit.h"

static int checks = 0;
static int failures = 0;

static void check(int ok, const char *what) {
    checks++;
    if (ok) {
        printf("ok: %s\n", what);
    } else {
        failures++;
        printf("FAILED: %s (last error: %s)\n", what, picajit_last_error_message());
    }
}

/* A status check that prints the library's message on failure. */
#define CHECK_OK(call, what) check((call) == PICAJIT_OK, what)

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* The execution model of the first OpEntryPoint in a SPIR-V module (0 Vertex, 3 Geometry), or
 * -1 without one: read by walking the instructions after the five-word header. */
static int spirv_execution_model(const char *module, uint64_t bytes) {
    const uint64_t count = bytes / 4;
    uint64_t at = 5;
    while (at < count) {
        uint32_t word;
        memcpy(&word, module + 4 * at, 4);
        const uint32_t length = word >> 16;
        if ((word & 0xFFFFu) == 15u && at + 1 < count) {
            uint32_t model;
            memcpy(&model, module + 4 * (at + 1), 4);
            return (int)model;
        }
        if (length == 0) {
            return -1;
        }
        at += length;
    }
    return -1;
}

/* ---- struct sizes agree with the library -------------------------------------------------- */

static void check_sizes(int argc, char **argv) {
    if (argc <= 2) {
        printf("struct sizes not given: not checked\n");
        return;
    }
    struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"program", sizeof(picajit_program)},
        {"config", sizeof(picajit_config)},
        {"layout", sizeof(picajit_layout)},
        {"dvle_info", sizeof(picajit_dvle_info)},
        {"cache_stats", sizeof(picajit_cache_stats)},
        {"flow", sizeof(picajit_flow)},
        {"vertex_error", sizeof(picajit_vertex_error)},
        {"batch", sizeof(picajit_batch)},
        {"vertices", sizeof(picajit_vertices)},
        {"emit_callbacks", sizeof(picajit_emit_callbacks)},
        {"translate_options", sizeof(picajit_translate_options)},
        {"translation_info", sizeof(picajit_translation_info)},
    };
    int seen = 0;
    for (int i = 2; i < argc; i++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t len = strlen(sizes[k].name);
            if (strncmp(argv[i], sizes[k].name, len) == 0 && argv[i][len] == '=') {
                char what[96];
                snprintf(what, sizeof what, "sizeof(picajit_%s) is %zu as in Rust (%s)",
                         sizes[k].name, sizes[k].size, argv[i] + len + 1);
                check((size_t)strtoull(argv[i] + len + 1, NULL, 10) == sizes[k].size, what);
                seen++;
            }
        }
    }
    check(seen == (int)(sizeof sizes / sizeof sizes[0]), "every struct size was given");
}

/* ---- the lit-transform vertex shader ------------------------------------------------------ */

/* corpus/examples/lit-transform.shbin (see `picajit disasm`):
 *   dp4 o0.x, c0, v0 ... dp4 o0.w, c3, v0      position = projection rows c0-c3 . v0
 *   dp3 r0.x, c4, v2; max r0.x, c95.x, r0.x    light = max(0, lightDir . normal)
 *   add r0.x, c95.y, r0.x                      + 0.25 (the constant c95 = (0, 0.25, 0, 0))
 *   mul o1.xyz, r0.x, v1; mov o1.w, v1         color = light * v1
 *   mov o2.xy, v3                              texcoord
 * Every value below is a small dyadic number, exact in float24, so the expected outputs are
 * plain arithmetic. */
#define COUNT 300
#define STRIDE 304 /* a padded plane stride: the planes of a buffer start STRIDE floats apart */

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)size);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *len = (size_t)size;
    return data;
}

/* Input plane k (register k/4, component k%4) of vertex i. */
static float input_value(int k, int i) {
    float v[4][4] = {
        {(float)i, (float)(i + 1), (float)-i, 1.0f},     /* v0: position */
        {1.0f, 0.5f, 2.0f, 0.75f},                       /* v1: color */
        {0.0f, 0.0f, (i % 2 == 0) ? 1.0f : -1.0f, 0.0f}, /* v2: normal, facing or not */
        {i * 0.25f, 3.0f, 0.0f, 1.0f},                   /* v3: texcoord */
    };
    return v[k / 4][k % 4];
}

/* The expected output plane k (o0 x-w, o1 x-w, o2 x-y) of vertex i, from the instructions. */
static float expected_output(int k, int i) {
    float light = (i % 2 == 0) ? 1.25f : 0.25f; /* max(0, +-1) + 0.25 */
    float o[12] = {
        2.0f * i + 1.0f,              /* c0 = (2, 0, 0, 1):   2x + w */
        (i + 1) * 0.5f - 1.0f,        /* c1 = (0, 0.5, 0, -1): y/2 - w */
        (float)(i + 1),               /* c2 = (1, 1, 1, 0):   x + y + z */
        1.0f,                         /* c3 = (0, 0, 0, 1):   w */
        light * 1.0f, light * 0.5f, light * 2.0f, 0.75f, /* o1 = light * v1, v1.w */
        i * 0.25f, 3.0f, 0.0f, 0.0f,  /* o2.xy = v3.xy (zw never written: +0) */
    };
    return o[k];
}

static void lit_transform(const char *path) {
    size_t len = 0;
    unsigned char *blob = read_file(path, &len);
    check(blob != NULL, "read the lit-transform SHBIN");
    if (!blob) return;

    picajit_shbin *shbin = NULL;
    CHECK_OK(picajit_shbin_parse(blob, len, &shbin), "parse the SHBIN blob");
    free(blob); /* the handle holds its own copy */
    uint32_t dvles = 0;
    CHECK_OK(picajit_shbin_dvle_count(shbin, &dvles), "count the DVLEs");
    check(dvles == 1, "the blob has one DVLE");
    picajit_dvle_info info;
    CHECK_OK(picajit_shbin_dvle_info(shbin, 0, &info), "DVLE 0 info");
    check(info.stage == PICAJIT_STAGE_VERTEX && info.entry == 0 && info.output_mask == 0x7,
          "DVLE 0 is a vertex shader at 0 sending o0-o2");

    /* Two identical uploads through a cache: one compile, one hit. */
    picajit_cache *cache = NULL;
    CHECK_OK(picajit_cache_create(0, &cache), "create a cache");
    picajit_config config = {0}; /* the best engine, f24, the default budget */
    picajit_engine *engine = NULL, *again = NULL;
    CHECK_OK(picajit_engine_create_from_shbin(shbin, 0, &config, cache, &engine),
             "prepare DVLE 0 through the cache");
    CHECK_OK(picajit_engine_create_from_shbin(shbin, 0, &config, cache, &again),
             "prepare it again");
    picajit_cache_stats stats;
    CHECK_OK(picajit_cache_get_stats(cache, &stats), "cache statistics");
    check(stats.misses == 1 && stats.hits == 1 && stats.compiles == 1 && stats.programs == 1,
          "the second upload was a cache hit");
    picajit_engine_free(again);
    check(strcmp(picajit_engine_name(engine), "interp") != 0,
          "PICAJIT_ENGINE_BEST is a fast engine, not the reference interpreter");

    picajit_layout layout;
    CHECK_OK(picajit_engine_layout(engine, &layout), "query the layout");
    check(layout.input_mask == 0x000F && layout.output_mask == 0x0007 &&
              layout.stage == PICAJIT_STAGE_VERTEX,
          "the program reads v0-v3 and sends o0-o2");

    /* Uniforms: each setter form once, values chosen to be exact. */
    picajit_uniforms *uniforms = NULL;
    CHECK_OK(picajit_uniforms_create(&uniforms), "create uniforms");
    CHECK_OK(picajit_uniforms_apply_constants(uniforms, shbin, 0), "apply the DVLE constants");
    const float row0[4] = {2, 0, 0, 1}, row1[4] = {0, 0.5f, 0, -1}, row2[4] = {1, 1, 1, 0};
    CHECK_OK(picajit_uniforms_set_float(uniforms, 0, row0, PICAJIT_PRECISION_F24), "set c0");
    CHECK_OK(picajit_uniforms_set_float(uniforms, 1, row1, PICAJIT_PRECISION_F24), "set c1");
    CHECK_OK(picajit_uniforms_set_float(uniforms, 2, row2, PICAJIT_PRECISION_F24), "set c2");
    /* c3 = (0, 0, 0, 1) in the float32 upload format: FIFO order w, z, y, x; 1.0f is
     * 0x3F800000. */
    const uint32_t row3[4] = {0x3F800000u, 0, 0, 0};
    CHECK_OK(picajit_uniforms_set_float_f32_words(uniforms, 3, row3, PICAJIT_PRECISION_F24),
             "set c3 from float32 upload words");
    /* c4 = (0, 0, 1, 0) in the float24 upload format: 1.0 is 0x3F0000 (exponent 63, the bias);
     * word0 = w<<8 | z>>16 = 0x3F, word1 = (z & 0xFFFF)<<16 | y>>8 = 0, word2 = 0. */
    const uint32_t light[3] = {0x3Fu, 0, 0};
    CHECK_OK(picajit_uniforms_set_float_f24_words(uniforms, 4, light),
             "set c4 from float24 upload words");
    float c3[4], c4[4], c95[4];
    CHECK_OK(picajit_uniforms_get_float(uniforms, 3, c3), "read c3 back");
    CHECK_OK(picajit_uniforms_get_float(uniforms, 4, c4), "read c4 back");
    CHECK_OK(picajit_uniforms_get_float(uniforms, 95, c95), "read c95 back");
    check(c3[0] == 0 && c3[3] == 1 && c4[2] == 1 && c4[0] == 0 && c95[1] == 0.25f,
          "uniform conversions: c3.w = 1, c4.z = 1, constant c95.y = 0.25");

    /* The batch, in the caller's own buffers. */
    float *inputs = malloc(sizeof(float) * 16 * STRIDE);
    float *outputs = malloc(sizeof(float) * 12 * STRIDE);
    picajit_flow *flow = malloc(sizeof(picajit_flow) * COUNT);
    for (int k = 0; k < 16; k++)
        for (int i = 0; i < COUNT; i++) inputs[k * STRIDE + i] = input_value(k, i);
    for (int k = 0; k < 12 * STRIDE; k++) outputs[k] = -7.0f; /* the padding must stay so */
    memset(flow, 0xAB, sizeof(picajit_flow) * COUNT);
    picajit_vertex_error errors[4];
    picajit_batch batch = {0};
    batch.count = COUNT;
    batch.inputs = inputs;
    batch.input_mask = layout.input_mask;
    batch.input_stride = STRIDE;
    batch.outputs = outputs;
    batch.output_mask = layout.output_mask;
    batch.output_stride = STRIDE;
    batch.flow = flow;
    batch.errors = errors;
    batch.error_capacity = 4;
    check(picajit_run_batch(engine, uniforms, &batch) == 0, "run 300 vertices: none failed");
    int wrong = 0;
    for (int k = 0; k < 12; k++) {
        if (k >= 10) continue; /* o2.zw: written by nobody, +0, checked below */
        for (int i = 0; i < COUNT; i++)
            if (outputs[k * STRIDE + i] != expected_output(k, i)) {
                if (wrong++ < 5)
                    printf("  plane %d vertex %d: %g, expected %g\n", k, i,
                           outputs[k * STRIDE + i], expected_output(k, i));
            }
    }
    check(wrong == 0, "every output of every vertex is the value its instructions give");
    check(outputs[10 * STRIDE] == 0.0f && !signbit(outputs[10 * STRIDE]),
          "an output component never written is +0");
    int padding_kept = 1;
    for (int k = 0; k < 12; k++)
        for (int i = COUNT; i < STRIDE; i++)
            if (outputs[k * STRIDE + i] != -7.0f) padding_kept = 0;
    check(padding_kept, "nothing written between planes (past count)");
    check(flow[0].a0[0] == 0 && flow[0].al == 0 && flow[COUNT - 1].cmp[0] == 0 &&
              flow[COUNT - 1].reserved[0] == 0,
          "flow registers written (a program without MOVA/CMP leaves them zero)");

    /* The same batch on the reference interpreter gives the same bits. */
    picajit_config interp_config = {0};
    interp_config.engine = PICAJIT_ENGINE_INTERP;
    picajit_engine *interp = NULL;
    CHECK_OK(picajit_engine_create_from_shbin(shbin, 0, &interp_config, NULL, &interp),
             "prepare the interpreter without a cache");
    float *reference = malloc(sizeof(float) * 12 * STRIDE);
    memcpy(reference, outputs, sizeof(float) * 12 * STRIDE);
    batch.flow = NULL;
    check(picajit_run_batch(interp, uniforms, &batch) == 0, "the interpreter runs the batch");
    check(memcmp(reference, outputs, sizeof(float) * 12 * STRIDE) == 0,
          "the interpreter's outputs equal the best engine's bit for bit");
    check(strcmp(picajit_engine_name(interp), "interp") == 0, "the interpreter's name");
    free(reference);
    picajit_engine_free(interp);

    /* The same batch in the emulator's layout: each vertex its 16 registers, masks saying which
     * are read and written. Registers outside the output mask keep what they held. */
    float(*vertex_in)[16][4] = malloc(sizeof *vertex_in * COUNT);
    float(*vertex_out)[16][4] = malloc(sizeof *vertex_out * COUNT);
    for (int i = 0; i < COUNT; i++)
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 4; c++) {
                vertex_in[i][r][c] = r < 4 ? input_value(4 * r + c, i) : NAN;
                vertex_out[i][r][c] = -7.0f;
            }
    picajit_vertex_error vertex_errors[2];
    picajit_vertices vertices = {0};
    vertices.count = COUNT;
    vertices.inputs = (const float(*)[16][4])vertex_in;
    vertices.input_mask = layout.input_mask;
    vertices.outputs = vertex_out;
    vertices.output_mask = 0x0005; /* o0 and o2 */
    vertices.errors = vertex_errors;
    vertices.error_capacity = 2;
    check(picajit_run_vertices(engine, uniforms, &vertices) == 0,
          "run 300 vertices in the emulator's layout: none failed");
    int vertex_wrong = 0, vertex_kept = 1;
    for (int i = 0; i < COUNT; i++)
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 4; c++) {
                float got = vertex_out[i][r][c];
                if (r == 0 || r == 2) {
                    if (memcmp(&got, &outputs[(4 * (r == 2 ? 2 : 0) + c) * STRIDE + i],
                               sizeof got) != 0 && vertex_wrong++ < 5)
                        printf("  vertex %d o%d[%d]: %g\n", i, r, c, got);
                } else if (got != -7.0f) {
                    vertex_kept = 0;
                }
            }
    check(vertex_wrong == 0, "o0 and o2 equal the planes' bit for bit");
    check(vertex_kept, "registers outside the output mask (o1, o3-o15) keep what they held");
    picajit_vertices bad_vertices = vertices;
    bad_vertices.input_mask = 0x0007; /* no v3 */
    check(picajit_run_vertices(engine, uniforms, &bad_vertices) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "vertices->input_mask") &&
              contains(picajit_last_error_message(), "v3"),
          "vertices without v3, which the program reads, are refused naming v3");
    bad_vertices = vertices;
    bad_vertices.outputs = (float(*)[16][4])vertex_in + 1;
    check(picajit_run_vertices(engine, uniforms, &bad_vertices) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "overlaps"),
          "overlapping input and output vertices are refused");
    free(vertex_in);
    free(vertex_out);

    /* Background compiles: the best engine (auto) has run 600 vertices, far from hot; waiting
     * compiles what is left, and the engine is then ready. */
    uint32_t compile = 99;
    CHECK_OK(picajit_engine_compile_status(engine, uniforms, &compile), "ask about compiles");
    check(compile == PICAJIT_COMPILE_COLD, "a program run little is not compiled yet (cold)");
    CHECK_OK(picajit_engine_wait_compiled(engine, uniforms), "wait for the compiles");
    CHECK_OK(picajit_engine_compile_status(engine, uniforms, &compile), "ask again");
    check(compile == PICAJIT_COMPILE_READY, "after waiting, everything is compiled (ready)");
    check(picajit_engine_compile_status(engine, uniforms, NULL) == PICAJIT_ERROR_NULL_POINTER,
          "a NULL status is PICAJIT_ERROR_NULL_POINTER");

    /* One vertex. */
    float vin[16][4], vout[16][4];
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 4; c++) vin[r][c] = (r < 4) ? input_value(4 * r + c, 7) : 0.0f;
    picajit_flow vflow;
    CHECK_OK(picajit_run_vertex(engine, uniforms, (const float(*)[4])vin, vout, &vflow),
             "run one vertex");
    check(vout[0][0] == 15.0f && vout[1][0] == 0.25f && vout[2][0] == 1.75f,
          "one vertex: o0.x = 2*7+1, o1.x = 0.25 (facing away), o2.x = 7/4");

    /* The blob's program memory, uploaded as words: the same engine as from the SHBIN. */
    const uint32_t *code = NULL, *opdescs = NULL;
    size_t code_len = 0, opdesc_len = 0;
    CHECK_OK(picajit_shbin_program(shbin, &code, &code_len, &opdescs, &opdesc_len),
             "the blob's code words and descriptors");
    picajit_program words = {0};
    words.code = code;
    words.code_len = code_len;
    words.opdescs = opdescs;
    words.opdesc_len = opdesc_len;
    words.entry = info.entry;
    words.stage = info.stage;
    words.output_mask = info.output_mask;
    picajit_engine *from_words = NULL;
    CHECK_OK(picajit_engine_create(&words, &config, cache, &from_words),
             "upload the blob's words through the cache");
    CHECK_OK(picajit_cache_get_stats(cache, &stats), "cache statistics again");
    float wout[16][4];
    CHECK_OK(picajit_run_vertex(from_words, uniforms, (const float(*)[4])vin, wout, NULL),
             "run the vertex on the uploaded words");
    check(code_len > 0 && opdesc_len > 0 && stats.hits == 2 &&
              memcmp(wout, vout, sizeof vout) == 0,
          "the blob's words are the program its DVLE prepares (a cache hit, the same outputs)");
    picajit_engine_free(from_words);

    /* Argument errors: a status and a message naming what is wrong, nothing written. */
    picajit_batch bad = batch;
    bad.output_stride = COUNT - 1;
    int32_t status = picajit_run_batch(engine, uniforms, &bad);
    check(status == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "picajit_run_batch") &&
              contains(picajit_last_error_message(), "stride"),
          "an output stride smaller than the count is PICAJIT_ERROR_BAD_ARGUMENT");
    printf("  message: %s\n", picajit_last_error_message());
    bad = batch;
    bad.input_mask = 0x000B; /* no v2 */
    status = picajit_run_batch(engine, uniforms, &bad);
    check(status == PICAJIT_ERROR_BAD_ARGUMENT && contains(picajit_last_error_message(), "v2"),
          "input planes without v2, which the program reads, are refused naming v2");
    printf("  message: %s\n", picajit_last_error_message());
    bad = batch;
    bad.output_mask = 0x0010;
    check(picajit_run_batch(engine, uniforms, &bad) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "o4"),
          "an output plane the program does not send (o4) is refused");
    bad = batch;
    bad.errors = NULL;
    check(picajit_run_batch(engine, uniforms, &bad) == PICAJIT_ERROR_NULL_POINTER &&
              contains(picajit_last_error_message(), "batch->errors"),
          "a NULL error array with a capacity is PICAJIT_ERROR_NULL_POINTER");
    bad = batch;
    bad.outputs = inputs;
    check(picajit_run_batch(engine, uniforms, &bad) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "overlaps"),
          "overlapping input and output planes are refused");
    check(picajit_run_batch(engine, NULL, &batch) == PICAJIT_ERROR_NULL_POINTER &&
              contains(picajit_last_error_message(), "uniforms"),
          "NULL uniforms are PICAJIT_ERROR_NULL_POINTER");
    check(picajit_engine_create(NULL, NULL, NULL, &again) == PICAJIT_ERROR_NULL_POINTER &&
              contains(picajit_last_error_message(), "program"),
          "a NULL program is PICAJIT_ERROR_NULL_POINTER naming it");
    check(picajit_uniforms_set_float(uniforms, 96, row0, 0) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "c96"),
          "c96 is PICAJIT_ERROR_BAD_ARGUMENT");
    picajit_config unknown = {0};
    unknown.engine = 99;
    check(picajit_engine_create_from_shbin(shbin, 0, &unknown, NULL, &again) ==
                  PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "config->engine"),
          "an unknown engine number is PICAJIT_ERROR_BAD_ARGUMENT");
    check(picajit_engine_create_from_shbin(shbin, 1, NULL, NULL, &again) ==
              PICAJIT_ERROR_BAD_SHBIN,
          "DVLE 1 of a one-DVLE blob is PICAJIT_ERROR_BAD_SHBIN");
    const unsigned char garbage[8] = {'D', 'V', 'L', 'X', 0, 0, 0, 0};
    picajit_shbin *broken = NULL;
    check(picajit_shbin_parse(garbage, sizeof garbage, &broken) == PICAJIT_ERROR_BAD_SHBIN &&
              broken == NULL,
          "a malformed blob is PICAJIT_ERROR_BAD_SHBIN");
    printf("  message: %s\n", picajit_last_error_message());
    check(strcmp(picajit_status_name(PICAJIT_ERROR_BAD_SHBIN), "PICAJIT_ERROR_BAD_SHBIN") == 0,
          "status names");

    free(inputs);
    free(outputs);
    free(flow);
    picajit_uniforms_free(uniforms);
    picajit_engine_free(engine);
    picajit_cache_free(cache);
    picajit_shbin_free(shbin);
}

/* ---- per-vertex errors: BREAKC outside a loop --------------------------------------------- */

/* mov o0, v0; cmp c0, gt, gt, v0; breakc cmp.x; end: a vertex with v0.x < 0 (c0 = 0) takes a
 * BREAK with no loop, which the GPU would hang on: break-outside-loop at 0x002. */
static const uint32_t break_code[] = {0x4C000000u, 0xBC820000u, 0x8F800000u, 0x88000000u};
static const uint32_t break_opdescs[] = {0x0006C36Fu};

/* A program of `code_len` words and one operand descriptor that sends on o0 alone. */
static picajit_program o0_program(const uint32_t *code, size_t code_len,
                                  const uint32_t *opdesc, uint32_t stage) {
    picajit_program program = {0};
    program.code = code;
    program.code_len = code_len;
    program.opdescs = opdesc;
    program.opdesc_len = 1;
    program.stage = stage;
    program.output_mask = 0x1;
    return program;
}

static picajit_program break_program(void) {
    return o0_program(break_code, 4, break_opdescs, PICAJIT_STAGE_VERTEX);
}

/* A batch of `count` vertices with v0 alone in and o0 alone out, planes `count` apart. */
static picajit_batch v0_batch(size_t count, const float *in, float *out) {
    picajit_batch batch = {0};
    batch.count = count;
    batch.inputs = in;
    batch.input_mask = 0x1;
    batch.input_stride = count;
    batch.outputs = out;
    batch.output_mask = 0x1;
    batch.output_stride = count;
    return batch;
}

static void break_outside_loop(void) {
    picajit_program program = break_program();
    picajit_engine *engine = NULL;
    CHECK_OK(picajit_engine_create(&program, NULL, NULL, &engine), "upload the BREAKC program");
    picajit_uniforms *uniforms = NULL;
    CHECK_OK(picajit_uniforms_create(&uniforms), "zero uniforms (c0 = 0)");

    enum { N = 10 };
    float in[4 * N], out[4 * N];
    for (int i = 0; i < N; i++) {
        in[0 * N + i] = (float)(i - 5); /* vertices 0-4 are negative: they fail */
        in[1 * N + i] = 1.0f;
        in[2 * N + i] = 2.0f;
        in[3 * N + i] = 1.0f;
    }
    picajit_vertex_error errors[4];
    memset(errors, 0xEE, sizeof errors);
    picajit_batch batch = v0_batch(N, in, out);
    batch.errors = errors;
    batch.error_capacity = 3; /* fewer than the failures: only 3 are written */
    int32_t failed = picajit_run_batch(engine, uniforms, &batch);
    check(failed == 5, "five of ten vertices fail (v0.x < 0)");
    check(errors[0].vertex == 0 && errors[2].vertex == 2 &&
              errors[0].code == PICAJIT_ERROR_BREAK_OUTSIDE_LOOP && errors[1].pc == 2,
          "error entries: vertices 0, 1, 2, break-outside-loop at 0x002");
    check(errors[3].vertex == 0xEEEEEEEEu, "no entry written past the capacity");
    check(out[0] == 0.0f && out[N + 4] == 0.0f && out[5] == 0.0f && out[6] == 1.0f &&
              out[N + 6] == 1.0f && out[2 * N + 9] == 2.0f,
          "failed vertices output +0, the others o0 = v0");

    float vin[16][4] = {{-1, 0, 0, 1}}, vout[16][4];
    int32_t status = picajit_run_vertex(engine, uniforms, (const float(*)[4])vin, vout, NULL);
    check(status == PICAJIT_ERROR_BREAK_OUTSIDE_LOOP &&
              contains(picajit_last_error_message(), "break-outside-loop"),
          "one failing vertex returns PICAJIT_ERROR_BREAK_OUTSIDE_LOOP");
    printf("  message: %s\n", picajit_last_error_message());

    /* A budget of 2 instructions: every vertex stops at the third, 0x002. */
    picajit_config config = {0};
    config.engine = PICAJIT_ENGINE_JIT;
    config.instruction_budget = 2;
    picajit_engine *short_budget = NULL;
    CHECK_OK(picajit_engine_create(&program, &config, NULL, &short_budget),
             "upload it with a budget of 2");
    batch.error_capacity = 4;
    check(picajit_run_batch(short_budget, uniforms, &batch) == N &&
              errors[3].vertex == 3 && errors[3].code == PICAJIT_ERROR_INSTRUCTION_BUDGET &&
              errors[3].pc == 2,
          "every vertex exceeds a budget of 2 at 0x002");

    picajit_geometry_state *state = NULL;
    CHECK_OK(picajit_geometry_state_create(&state), "create a geometry state");
    check(picajit_run_geometry(engine, state, uniforms, (const float(*)[4])vin, NULL) ==
              PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "vertex shader"),
          "a vertex shader cannot run as a geometry shader");
    picajit_geometry_state_free(state);

    picajit_engine_free(short_budget);
    picajit_engine_free(engine);
    picajit_uniforms_free(uniforms);
}

/* ---- a kernel the structure-of-arrays compiler refuses --------------------------------------- */

/* for i0 { add r0, r0, v0 ten times }; mov o0, r0; end. With i0.x = 255 the loop runs 256
 * times: 2,560 instructions unrolled, past the 2,048 the SoA compiler traces for a program this
 * short, so the auto engine's batch kernel is refused; its batches run on the engine that
 * needs no compile, with the same bits. */
static const uint32_t long_loop_code[] = {
    0xA4002800u, 0x02010000u, 0x02010000u, 0x02010000u, 0x02010000u, 0x02010000u,
    0x02010000u, 0x02010000u, 0x02010000u, 0x02010000u, 0x02010000u, 0x4C010000u,
    0x88000000u};
static const uint32_t long_loop_opdescs[] = {0x0006C36Fu};

static void refused_kernel(void) {
    picajit_program program =
        o0_program(long_loop_code, sizeof long_loop_code / sizeof long_loop_code[0],
                   long_loop_opdescs, PICAJIT_STAGE_VERTEX);
    picajit_engine *engine = NULL;
    CHECK_OK(picajit_engine_create(&program, NULL, NULL, &engine), "upload the long loop (auto)");
    picajit_uniforms *uniforms = NULL;
    CHECK_OK(picajit_uniforms_create(&uniforms), "uniforms");
    const uint8_t i0[4] = {255, 0, 1, 0};
    CHECK_OK(picajit_uniforms_set_int(uniforms, 0, i0), "i0 = (255, 0, 1)");
    CHECK_OK(picajit_engine_wait_compiled(engine, uniforms), "wait for the compiles");
    uint32_t compile = 99;
    CHECK_OK(picajit_engine_compile_status(engine, uniforms, &compile), "ask about compiles");
    check(compile == PICAJIT_COMPILE_FAILED &&
              contains(picajit_last_error_message(), "unrolled control flow"),
          "a refused kernel: the compile status says failed, the reason is the last error");
    printf("  message: %s\n", picajit_last_error_message());

    enum { N = 6 };
    float in[4 * N], out[4 * N];
    for (int i = 0; i < N; i++)
        for (int c = 0; c < 4; c++) in[c * N + i] = (float)(i + c);
    picajit_batch batch = v0_batch(N, in, out);
    check(picajit_run_batch(engine, uniforms, &batch) == 0, "the batch runs all the same");
    int wrong = 0;
    for (int k = 0; k < 4 * N; k++) wrong += out[k] != 2560.0f * in[k];
    check(wrong == 0, "o0 = 2560 v0 (256 passes of ten adds)");

    /* With i0.x = 0 the loop runs once: that kernel compiles. */
    const uint8_t once[4] = {0, 0, 1, 0};
    CHECK_OK(picajit_uniforms_set_int(uniforms, 0, once), "i0 = (0, 0, 1)");
    CHECK_OK(picajit_engine_wait_compiled(engine, uniforms), "wait again");
    CHECK_OK(picajit_engine_compile_status(engine, uniforms, &compile), "ask again");
    check(compile == PICAJIT_COMPILE_READY, "other int uniforms: another kernel, compiled");
    picajit_engine_free(engine);
    picajit_uniforms_free(uniforms);
}

/* ---- inputs become register values -------------------------------------------------------- */

static uint32_t bits_of(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* The run functions take f32 attributes and convert them as the precision mode says
 * (docs/execution-model.md section 7): in f24, 0.1f (0x3DCCCCCD) truncated to 16 mantissa bits
 * is 0x3DCCCC80, 1e30 is beyond float24's range (2^64) and becomes +inf, 1e-30 is below its
 * smallest normal (2^-62) and becomes +0; round-to-nearest-even rounds 0.1f up to 0x3DCCCD00;
 * f32 keeps every value. The BREAKC program's first instruction is mov o0, v0 (v0.x >= 0 does
 * not break). Every engine, through run_vertex and run_batch. */
static void inputs_become_register_values(void) {
    static const struct {
        uint32_t precision;
        uint32_t expected[4];
    } modes[] = {
        {PICAJIT_PRECISION_F24, {0x3DCCCC80u, 0x7F800000u, 0x00000000u, 0x40400000u}},
        {PICAJIT_PRECISION_F24_RNE, {0x3DCCCD00u, 0x7F800000u, 0x00000000u, 0x40400000u}},
        {PICAJIT_PRECISION_F32, {0x3DCCCCCDu, 0x7149F2CAu, 0x0DA24260u, 0x40400000u}},
    };
    static const uint32_t engines[] = {PICAJIT_ENGINE_BEST,   PICAJIT_ENGINE_INTERP,
                                       PICAJIT_ENGINE_JIT,    PICAJIT_ENGINE_SOA_JIT,
                                       PICAJIT_ENGINE_VINTERP, PICAJIT_ENGINE_AUTO};
    const float v0[4] = {0.1f, 1e30f, 1e-30f, 3.0f};
    check(bits_of(v0[0]) == 0x3DCCCCCDu && bits_of(v0[1]) == 0x7149F2CAu &&
              bits_of(v0[2]) == 0x0DA24260u,
          "the inputs' f32 bits are as expected");
    picajit_program program = break_program();
    picajit_uniforms *uniforms = NULL;
    CHECK_OK(picajit_uniforms_create(&uniforms), "zero uniforms");
    int all_vertex = 1, all_batch = 1;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
            picajit_config config = {0};
            config.engine = engines[e];
            config.precision = modes[m].precision;
            picajit_engine *engine = NULL;
            CHECK_OK(picajit_engine_create(&program, &config, NULL, &engine),
                     "upload mov o0, v0 with the engine and mode");
            float vin[16][4] = {{0}}, vout[16][4];
            memcpy(vin[0], v0, sizeof v0);
            CHECK_OK(picajit_run_vertex(engine, uniforms, (const float(*)[4])vin, vout, NULL),
                     "run one vertex");
            enum { N = 9 };
            float in[4 * N], out[4 * N];
            for (int i = 0; i < N; i++) {
                for (int c = 0; c < 4; c++) {
                    in[c * N + i] = v0[c];
                }
            }
            picajit_batch batch = v0_batch(N, in, out);
            check(picajit_run_batch(engine, uniforms, &batch) == 0, "run a batch of 9");
            for (int c = 0; c < 4; c++) {
                if (bits_of(vout[0][c]) != modes[m].expected[c]) {
                    printf("  mode %u engine %u: run_vertex o0[%d] = %#010x, expected %#010x\n",
                           modes[m].precision, engines[e], c, bits_of(vout[0][c]),
                           modes[m].expected[c]);
                    all_vertex = 0;
                }
                for (int i = 0; i < N; i++) {
                    if (bits_of(out[c * N + i]) != modes[m].expected[c]) {
                        all_batch = 0;
                    }
                }
            }
            check(in[0] == 0.1f, "the caller's input planes are not written");
            picajit_engine_free(engine);
        }
    }
    check(all_vertex, "run_vertex: o0 = v0 converted by the mode, on every engine");
    check(all_batch, "run_batch: o0 = v0 converted by the mode, on every engine and vertex");
    picajit_uniforms_free(uniforms);
}

/* ---- uniforms in bulk, and their precision ------------------------------------------------ */

static int same_floats(const picajit_uniforms *a, const picajit_uniforms *b) {
    for (uint32_t c = 0; c < 96; c++) {
        float x[4], y[4];
        if (picajit_uniforms_get_float(a, c, x) != PICAJIT_OK ||
            picajit_uniforms_get_float(b, c, y) != PICAJIT_OK || memcmp(x, y, sizeof x) != 0) {
            return 0;
        }
    }
    return 1;
}

/* The bulk setters set what as many single calls set; a range past c95 is refused; uniforms
 * converted under one precision are refused by an engine of another and by a conversion under a
 * second mode, until reset. */
static void uniforms_in_bulk(void) {
    float values[96][4];
    uint32_t f24_words[96][3], f32_words[96][4];
    for (int c = 0; c < 96; c++) {
        for (int k = 0; k < 4; k++) {
            values[c][k] = (float)(c * 4 + k) * 0.37f - 50.0f;
            f32_words[c][k] = bits_of(values[c][3 - k]); /* FIFO order w, z, y, x */
        }
        f24_words[c][0] = 0x3F0000u + (uint32_t)c; /* w<<8 | z>>16: arbitrary words */
        f24_words[c][1] = 0x12345678u ^ (uint32_t)c;
        f24_words[c][2] = 0x9ABCDEF0u + (uint32_t)c * 77u;
    }
    picajit_uniforms *one = NULL, *bulk = NULL;
    CHECK_OK(picajit_uniforms_create(&one), "uniforms set one at a time");
    CHECK_OK(picajit_uniforms_create(&bulk), "uniforms set in bulk");
    int singles_ok = 1;
    for (uint32_t c = 0; c < 96; c++) {
        singles_ok &= picajit_uniforms_set_float(one, c, values[c], PICAJIT_PRECISION_F24) ==
                      PICAJIT_OK;
    }
    check(singles_ok, "96 single set_float calls");
    CHECK_OK(picajit_uniforms_set_floats(bulk, 0, 96, (const float(*)[4])values,
                                         PICAJIT_PRECISION_F24),
             "one set_floats call for c0-c95");
    check(same_floats(one, bulk), "set_floats sets what 96 set_float calls set");

    for (uint32_t c = 10; c < 40; c++) {
        singles_ok &= picajit_uniforms_set_float_f24_words(one, c, f24_words[c]) == PICAJIT_OK;
        singles_ok &= picajit_uniforms_set_float_f32_words(one, c + 40, f32_words[c],
                                                           PICAJIT_PRECISION_F24) == PICAJIT_OK;
    }
    CHECK_OK(picajit_uniforms_set_floats_f24_words(bulk, 10, 30,
                                                   (const uint32_t(*)[3])&f24_words[10]),
             "set_floats_f24_words for c10-c39");
    CHECK_OK(picajit_uniforms_set_floats_f32_words(bulk, 50, 30,
                                                   (const uint32_t(*)[4])&f32_words[10],
                                                   PICAJIT_PRECISION_F24),
             "set_floats_f32_words for c50-c79");
    check(singles_ok && same_floats(one, bulk),
          "the word formats in bulk set what single calls set");

    check(picajit_uniforms_set_floats(bulk, 90, 7, (const float(*)[4])values,
                                      PICAJIT_PRECISION_F24) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "c95"),
          "a range past c95 is PICAJIT_ERROR_BAD_ARGUMENT");
    CHECK_OK(picajit_uniforms_set_floats(bulk, 95, 0, NULL, PICAJIT_PRECISION_F24),
             "an empty range with NULL does nothing");
    const uint8_t ints[4][4] = {{3, 0, 1, 0}, {1, 2, 3, 4}, {0, 0, 0, 0}, {255, 255, 255, 255}};
    CHECK_OK(picajit_uniforms_set_ints(bulk, ints), "set_ints sets i0-i3");
    check(picajit_uniforms_set_ints(bulk, NULL) == PICAJIT_ERROR_NULL_POINTER,
          "set_ints with NULL is PICAJIT_ERROR_NULL_POINTER");

    /* Precision: c0 converted under f32, then run on an f24 engine. */
    picajit_program program = break_program();
    picajit_engine *f24 = NULL;
    CHECK_OK(picajit_engine_create(&program, NULL, NULL, &f24), "an f24 engine");
    picajit_uniforms *u = NULL;
    CHECK_OK(picajit_uniforms_create(&u), "uniforms");
    const float zero[4] = {0, 0, 0, 0};
    CHECK_OK(picajit_uniforms_set_float(u, 0, zero, PICAJIT_PRECISION_F32), "c0 under f32");
    float vin[16][4] = {{1, 2, 3, 4}}, vout[16][4];
    check(picajit_run_vertex(f24, u, (const float(*)[4])vin, vout, NULL) ==
                  PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "precision"),
          "uniforms converted under f32 are refused by an f24 engine");
    check(picajit_uniforms_set_float(u, 1, zero, PICAJIT_PRECISION_F24) ==
              PICAJIT_ERROR_BAD_ARGUMENT,
          "a conversion under a second mode is refused");
    CHECK_OK(picajit_uniforms_reset(u), "reset");
    CHECK_OK(picajit_uniforms_set_float(u, 1, zero, PICAJIT_PRECISION_F24), "c1 under f24");
    CHECK_OK(picajit_run_vertex(f24, u, (const float(*)[4])vin, vout, NULL),
             "after a reset, f24 uniforms run on the f24 engine");
    picajit_engine_free(f24);
    picajit_uniforms_free(u);
    picajit_uniforms_free(one);
    picajit_uniforms_free(bulk);
}

/* ---- a geometry shader with callbacks ----------------------------------------------------- */

/* mov o0, v0; setemit 0; emit; mov o0, v1; setemit 1; emit; mov o0, v2; setemit 2, prim; emit;
 * mov o0, v3; setemit 1, prim inv; emit; end: a strip of two triangles (v0 v1 v2) and, slot 1
 * replaced, (v0 v3 v2) with the winding flag. */
static const uint32_t strip_code[] = {
    0x4C000000u, 0xAC000000u, 0xA8000000u, 0x4C001000u, 0xAD000000u, 0xA8000000u, 0x4C002000u,
    0xAE800000u, 0xA8000000u, 0x4C003000u, 0xADC00000u, 0xA8000000u, 0x88000000u,
};
static const uint32_t strip_opdescs[] = {0x0000036Fu};

struct emitted {
    int vertices, triangles;
    float first_x[8];          /* o0.x of each vertex */
    float triangle_x[4][3];    /* o0.x of each triangle's slots */
    uint32_t winding[4];
};

static void on_vertex(void *user, uint32_t vertex_id, uint32_t primitive, uint32_t winding,
                      const float outputs[16][4]) {
    struct emitted *e = (struct emitted *)user;
    (void)vertex_id;
    (void)primitive;
    (void)winding;
    if (e->vertices < 8) e->first_x[e->vertices] = outputs[0][0];
    e->vertices++;
}

static void on_primitive(void *user, uint32_t winding, const float slots[3][16][4]) {
    struct emitted *e = (struct emitted *)user;
    if (e->triangles < 4) {
        for (int s = 0; s < 3; s++) e->triangle_x[e->triangles][s] = slots[s][0][0];
        e->winding[e->triangles] = winding;
    }
    e->triangles++;
}

static void geometry(void) {
    picajit_program program = o0_program(strip_code, sizeof strip_code / sizeof strip_code[0],
                                         strip_opdescs, PICAJIT_STAGE_GEOMETRY);
    picajit_engine *engine = NULL;
    CHECK_OK(picajit_engine_create(&program, NULL, NULL, &engine), "upload the strip GS");
    picajit_layout layout;
    CHECK_OK(picajit_engine_layout(engine, &layout), "GS layout");
    check(layout.input_mask == 0xF && layout.stage == PICAJIT_STAGE_GEOMETRY,
          "the GS reads v0-v3");
    picajit_uniforms *uniforms = NULL;
    CHECK_OK(picajit_uniforms_create(&uniforms), "GS uniforms");
    picajit_geometry_state *state = NULL;
    CHECK_OK(picajit_geometry_state_create(&state), "GS state");

    struct emitted e;
    memset(&e, 0, sizeof e);
    picajit_emit_callbacks callbacks = {&e, on_vertex, on_primitive};
    float in[16][4] = {{10, 0, 0, 1}, {11, 0, 0, 1}, {12, 0, 0, 1}, {13, 0, 0, 1}};
    CHECK_OK(picajit_run_geometry(engine, state, uniforms, (const float(*)[4])in, &callbacks),
             "first invocation");
    check(e.vertices == 4 && e.triangles == 2, "4 vertices and 2 triangles emitted");
    check(e.first_x[0] == 10 && e.first_x[3] == 13, "vertices in emission order");
    check(e.triangle_x[0][0] == 10 && e.triangle_x[0][1] == 11 && e.triangle_x[0][2] == 12 &&
              e.winding[0] == 0,
          "triangle 1 is slots (v0, v1, v2)");
    check(e.triangle_x[1][0] == 10 && e.triangle_x[1][1] == 13 && e.triangle_x[1][2] == 12 &&
              e.winding[1] == 1,
          "triangle 2 is (v0, v3, v2), winding inverted");
    CHECK_OK(picajit_run_geometry(engine, state, uniforms, (const float(*)[4])in, &callbacks),
             "second invocation on the same state");
    check(e.vertices == 8 && e.triangles == 4, "8 vertices and 4 triangles in all");
    CHECK_OK(picajit_run_geometry(engine, state, uniforms, (const float(*)[4])in, NULL),
             "an invocation without callbacks");
    CHECK_OK(picajit_geometry_state_reset(state), "reset the state");

    picajit_geometry_state_free(state);
    picajit_uniforms_free(uniforms);
    picajit_engine_free(engine);
}

/* Translations for host GPUs: the source and its interface, the options, the block's bytes. */
static void translations(const char *path) {
    size_t len = 0;
    unsigned char *blob = read_file(path, &len);
    if (!blob) return;
    picajit_shbin *shbin = NULL;
    CHECK_OK(picajit_shbin_parse(blob, len, &shbin), "parse the SHBIN blob for translation");
    free(blob);

    picajit_translation *plain = NULL;
    CHECK_OK(picajit_translate_shbin(shbin, 0, NULL, &plain), "translate DVLE 0, defaults");
    const char *source = picajit_translation_source(plain);
    picajit_translation_info info;
    CHECK_OK(picajit_translation_get_info(plain, &info), "the translation's interface");
    check(strncmp(source, "#version 330 core", 17) == 0 && contains(source, "void main()") &&
              contains(source, "uniform pica_uniforms") && contains(source, "out vec4 o0;") &&
              !contains(source, "// 000:"),
          "translate: GLSL 3.30 with its own main, varyings, no statement comments");
    check(info.source_bytes == strlen(source) && info.form == PICAJIT_FORM_STRUCTURED &&
              info.block_bytes == PICAJIT_UNIFORM_BLOCK_BYTES && info.float_offset == 0 &&
              info.int_offset == 1536 && info.bool_offset == 1600 && info.zero_offset == 1604,
          "translate: the block is c0-c95, i0-i3, b, zero in 1616 bytes");
    check(info.input_mask == 0x000F && info.output_mask == 0x0007,
          "translate: v0-v3 in, o0-o2 out, as the layout says");

    picajit_translate_options options = {0};
    options.language = PICAJIT_LANGUAGE_GLSL_ES300;
    options.outputs = PICAJIT_OUTPUTS_GLOBALS;
    options.comments = 1;
    options.entry = "run_vertex_shader";
    options.block_name = "emulator_uniforms";
    picajit_translation *embedded = NULL;
    CHECK_OK(picajit_translate_shbin(shbin, 0, &options, &embedded), "translate with options");
    source = picajit_translation_source(embedded);
    check(strncmp(source, "#version 300 es", 15) == 0 &&
              contains(source, "void run_vertex_shader()") && !contains(source, "void main()") &&
              contains(source, "uniform emulator_uniforms") && contains(source, "\nvec4 o0;") &&
              contains(source, "// 000: dp4 o0.x, c0, v0  (o0 position"),
          "translate: ES 3.00, an entry function, globals, comments with the DVLE's names");

    picajit_translate_options vulkan = {0};
    vulkan.language = PICAJIT_LANGUAGE_SPIRV;
    vulkan.comments = 1;
    picajit_translation *module = NULL;
    CHECK_OK(picajit_translate_shbin(shbin, 0, &vulkan, &module), "translate to SPIR-V");
    picajit_translation_info module_info;
    CHECK_OK(picajit_translation_get_info(module, &module_info), "the module's interface");
    const char *words = picajit_translation_source(module);
    uint32_t magic = 0;
    memcpy(&magic, words, 4);
    check(magic == 0x07230203u && ((uintptr_t)words % 4) == 0 &&
              module_info.source_bytes % 4 == 0 && module_info.source_bytes > 1000 &&
              module_info.input_mask == info.input_mask &&
              module_info.output_mask == info.output_mask,
          "translate: SPIR-V words, aligned, with the GLSL's interface");
    picajit_translation_free(module);
    vulkan.outputs = PICAJIT_OUTPUTS_GLOBALS;
    vulkan.entry = "run";
    module = NULL;
    check(picajit_translate_shbin(shbin, 0, &vulkan, &module) == PICAJIT_ERROR_BAD_ARGUMENT &&
              module == NULL && contains(picajit_last_error_message(), "options->outputs"),
          "translate: SPIR-V with PICAJIT_OUTPUTS_GLOBALS is refused, naming options->outputs");

    options.entry = "main";
    picajit_translation *refused = NULL;
    check(picajit_translate_shbin(shbin, 0, &options, &refused) == PICAJIT_ERROR_BAD_ARGUMENT &&
              refused == NULL && contains(picajit_last_error_message(), "options->entry"),
          "translate: main as the entry function of globals is refused, naming options->entry");
    options.entry = "run";
    options.block_name = "gl_block";
    check(picajit_translate_shbin(shbin, 0, &options, &refused) == PICAJIT_ERROR_BAD_ARGUMENT &&
              contains(picajit_last_error_message(), "options->block_name"),
          "translate: a reserved block name is refused");
    options.block_name = NULL;
    options.language = 9;
    check(picajit_translate_shbin(shbin, 0, &options, &refused) == PICAJIT_ERROR_BAD_ARGUMENT,
          "translate: an unknown language is refused");
    picajit_program geometry = o0_program(break_code, 4, break_opdescs, PICAJIT_STAGE_GEOMETRY);
    picajit_translation *geometry_glsl = NULL;
    CHECK_OK(picajit_translate(&geometry, NULL, &geometry_glsl), "translate a geometry shader");
    picajit_translation_info geometry_info;
    CHECK_OK(picajit_translation_get_info(geometry_glsl, &geometry_info), "its interface");
    source = picajit_translation_source(geometry_glsl);
    check(contains(source, "layout(points) in;") && contains(source, "uniform pica_geometry_state") &&
              geometry_info.stage == PICAJIT_STAGE_GEOMETRY &&
              geometry_info.state_block_bytes == 98 * 16 && geometry_info.max_vertices >= 3 &&
              info.stage == PICAJIT_STAGE_VERTEX && info.state_block_bytes == 0,
          "translate: a geometry shader, its state block of 98 vectors, its max_vertices");
    picajit_translation_free(geometry_glsl);
    picajit_translate_options es300 = {0};
    es300.language = PICAJIT_LANGUAGE_GLSL_ES300;
    check(picajit_translate(&geometry, &es300, &refused) == PICAJIT_ERROR_UNSUPPORTED &&
              refused == NULL && contains(picajit_last_error_message(), "geometry"),
          "translate: a geometry shader in GLSL ES 3.00 is PICAJIT_ERROR_UNSUPPORTED");
    picajit_translate_options geometry_spirv = {0};
    geometry_spirv.language = PICAJIT_LANGUAGE_SPIRV;
    picajit_translation *geometry_module = NULL;
    CHECK_OK(picajit_translate(&geometry, &geometry_spirv, &geometry_module),
             "translate a geometry shader to SPIR-V");
    picajit_translation_info geometry_module_info;
    CHECK_OK(picajit_translation_get_info(geometry_module, &geometry_module_info),
             "the geometry module's interface");
    check(spirv_execution_model(picajit_translation_source(geometry_module),
                                geometry_module_info.source_bytes) == 3 &&
              geometry_module_info.state_block_bytes == 98 * 16 &&
              geometry_module_info.max_vertices == geometry_info.max_vertices,
          "translate: a geometry shader in SPIR-V is a Geometry entry point with the GLSL's "
          "interface");
    picajit_translation_free(geometry_module);
    picajit_program vertex = break_program();
    check(picajit_translate(&vertex, NULL, &refused) == PICAJIT_OK &&
              contains(picajit_translation_source(refused), "void main()"),
          "translate: a raw upload translates");
    picajit_translation_free(refused);

    picajit_uniforms *uniforms = NULL;
    CHECK_OK(picajit_uniforms_create(&uniforms), "uniforms for the block");
    const float c1[4] = {1.5f, -2, 0, 0.25f};
    CHECK_OK(picajit_uniforms_set_float(uniforms, 1, c1, PICAJIT_PRECISION_F24), "set c1");
    const uint8_t ints[4][4] = {{0}, {0}, {7, 1, 2, 0}, {0}};
    CHECK_OK(picajit_uniforms_set_ints(uniforms, ints), "set i2");
    CHECK_OK(picajit_uniforms_set_bools(uniforms, 0x8001), "set b0 and b15");
    uint8_t block[PICAJIT_UNIFORM_BLOCK_BYTES + 4];
    memset(block, 0xEE, sizeof block);
    int32_t written = picajit_uniforms_block(uniforms, block, sizeof block);
    uint32_t word[4];
    memcpy(word, block + info.float_offset + 16, 16);
    uint32_t i2x, bools, zero;
    memcpy(&i2x, block + info.int_offset + 2 * 16, 4);
    memcpy(&bools, block + info.bool_offset, 4);
    memcpy(&zero, block + info.zero_offset, 4);
    check(written == (int32_t)PICAJIT_UNIFORM_BLOCK_BYTES && word[0] == bits_of(1.5f) &&
              word[1] == bits_of(-2.0f) && word[3] == bits_of(0.25f) && i2x == 7 &&
              bools == 0x8001 && zero == 0 && block[PICAJIT_UNIFORM_BLOCK_BYTES] == 0xEE,
          "uniforms_block: c1's bits, i2.x, the bools and zero where the info says");
    check(picajit_uniforms_block(uniforms, block, 100) == PICAJIT_ERROR_BAD_ARGUMENT,
          "uniforms_block: a short buffer is refused");

    picajit_uniforms_free(uniforms);
    picajit_translation_free(embedded);
    picajit_translation_free(plain);
    picajit_translation_free(NULL);
    picajit_shbin_free(shbin);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: smoke LIT-TRANSFORM.SHBIN [NAME=SIZE ...]\n");
        return 2;
    }
    check(picajit_abi_version() == PICAJIT_ABI_VERSION, "the library's ABI is the header's");
    printf("picajit %s\n", picajit_version());
    check_sizes(argc, argv);
    lit_transform(argv[1]);
    break_outside_loop();
    refused_kernel();
    inputs_become_register_values();
    uniforms_in_bulk();
    geometry();
    translations(argv[1]);
    picajit_engine_free(NULL); /* freeing NULL is allowed */
    printf("smoke: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
