/* The C ABI timed as an emulator calls it (benches/abi-compare.py drives it against the peer).
 *
 *   abi_bench PROGRAM.shbin INPUT.bin ENGINE PRECISION [VERTICES] [REPEAT]
 *
 * ENGINE is jit, soa-jit, vinterp, auto or interp; PRECISION f24 or f32. INPUT.bin holds the
 * uniforms and vertices of a `picajit run` input file (benches/abi-compare.py writes it; see
 * read_input). The DVLE 0 constants are applied first, then the input's uniforms. Every engine is
 * warmed up first (picajit_engine_wait_compiled), as a hot program in an emulator is.
 *
 * Three loops over VERTICES vertices (the input's, repeated), each the best of REPEAT runs:
 *   run_vertex   picajit_run_vertex per vertex, from an array of vertices of 16 registers to one;
 *   vertices16   picajit_run_vertices on batches of 16 vertices in that layout, masks from the
 *                program's layout;
 *   vertices     picajit_run_vertices on all VERTICES at once.
 * The last line printed is JSON with the ns per vertex of each. ABI_BENCH_LOOPS (a comma list of
 * those names) runs only some of them, for a profile of one; the others print 0. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "picajit.h"

static void die(const char *what) {
    fprintf(stderr, "abi_bench: %s: %s\n", what, picajit_last_error_message());
    exit(1);
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "abi_bench: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)size);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "abi_bench: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)size;
    return data;
}

/* INPUT.bin, little-endian: u32 float overrides, then each (u32 index, f32 x, y, z, w);
 * u32 int overrides, then each (u32 index, u8 x, y, z, w); u32 bools set, u32 bool values;
 * u32 vertices, then each vertex's 16 registers of 4 f32 (unset registers (0, 0, 0, 1)). */
/* Whether the comma list `loops` (NULL: every loop) names `name`. */
static int wants(const char *loops, const char *name) {
    if (!loops) return 1;
    size_t len = strlen(name);
    for (const char *at = loops; *at;) {
        const char *end = strchr(at, ',');
        size_t item = end ? (size_t)(end - at) : strlen(at);
        if (item == len && memcmp(at, name, len) == 0) return 1;
        if (!end) break;
        at = end + 1;
    }
    return 0;
}

typedef struct {
    const uint8_t *at, *end;
} reader;

static uint32_t read_u32(reader *r) {
    uint32_t v;
    if (r->end - r->at < 4) {
        fprintf(stderr, "abi_bench: the input file is truncated\n");
        exit(1);
    }
    memcpy(&v, r->at, 4);
    r->at += 4;
    return v;
}

static float read_f32(reader *r) {
    uint32_t bits = read_u32(r);
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint32_t engine_number(const char *name) {
    const char *names[] = {"best", "interp", "jit", "soa-jit", "vinterp", "auto"};
    for (uint32_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(name, names[k]) == 0) return k;
    fprintf(stderr, "abi_bench: unknown engine %s\n", name);
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: abi_bench PROGRAM.shbin INPUT.bin ENGINE PRECISION [VERTICES] "
                        "[REPEAT]\n");
        return 2;
    }
    size_t vertices_total = argc > 5 ? (size_t)strtoul(argv[5], NULL, 10) : 2048;
    int repeat = argc > 6 ? atoi(argv[6]) : 100;
    vertices_total = (vertices_total + 15) / 16 * 16;

    size_t shbin_len;
    uint8_t *shbin_bytes = read_file(argv[1], &shbin_len);
    picajit_shbin *shbin = NULL;
    if (picajit_shbin_parse(shbin_bytes, shbin_len, &shbin)) die("parse the SHBIN");
    picajit_config config = {0};
    config.engine = engine_number(argv[3]);
    config.precision = strcmp(argv[4], "f32") == 0 ? PICAJIT_PRECISION_F32 : PICAJIT_PRECISION_F24;
    picajit_engine *engine = NULL;
    if (picajit_engine_create_from_shbin(shbin, 0, &config, NULL, &engine)) die("prepare");
    picajit_layout layout;
    if (picajit_engine_layout(engine, &layout)) die("layout");

    picajit_uniforms *uniforms = NULL;
    if (picajit_uniforms_create(&uniforms)) die("uniforms");
    if (picajit_uniforms_apply_constants(uniforms, shbin, 0)) die("constants");
    size_t input_len;
    uint8_t *input = read_file(argv[2], &input_len);
    reader r = {input, input + input_len};
    for (uint32_t n = read_u32(&r); n > 0; n--) {
        uint32_t index = read_u32(&r);
        float v[4];
        for (int c = 0; c < 4; c++) v[c] = read_f32(&r);
        if (picajit_uniforms_set_float(uniforms, index, v, config.precision)) die("a float");
    }
    for (uint32_t n = read_u32(&r); n > 0; n--) {
        uint32_t index = read_u32(&r);
        uint32_t packed = read_u32(&r);
        uint8_t v[4];
        memcpy(v, &packed, 4);
        if (picajit_uniforms_set_int(uniforms, index, v)) die("an int");
    }
    uint32_t bools_set = read_u32(&r), bool_values = read_u32(&r);
    uint16_t bools;
    if (picajit_uniforms_get_bools(uniforms, &bools)) die("bools");
    bools = (uint16_t)((bools & ~bools_set) | (bool_values & bools_set));
    if (picajit_uniforms_set_bools(uniforms, bools)) die("bools");
    uint32_t given = read_u32(&r);
    if (given == 0) {
        fprintf(stderr, "abi_bench: the input has no vertices\n");
        return 1;
    }
    float(*in)[16][4] = malloc(sizeof *in * vertices_total);
    float(*out)[16][4] = calloc(vertices_total, sizeof *out);
    for (uint32_t i = 0; i < given; i++)
        for (int k = 0; k < 16; k++)
            for (int c = 0; c < 4; c++) {
                float v = read_f32(&r);
                for (size_t j = i; j < vertices_total; j += given) in[j][k][c] = v;
            }

    /* Hot: what the emulator's engine has compiled by its hundredth frame. */
    if (picajit_engine_wait_compiled(engine, uniforms)) die("warm up");
    double best_vertex = 1e300, best_16 = 1e300, best_all = 1e300;
    uint32_t failures = 0;
    picajit_vertices batch = {0};
    batch.input_mask = layout.input_mask;
    batch.output_mask = layout.output_mask;
    const char *loops = getenv("ABI_BENCH_LOOPS");
    int run_single = wants(loops, "run_vertex"), run_16 = wants(loops, "vertices16"),
        run_all = wants(loops, "vertices");
    for (int round = 0; round < repeat; round++) {
        double t0 = now_ns();
        for (size_t i = 0; run_single && i < vertices_total; i++)
            failures += picajit_run_vertex(engine, uniforms, (const float(*)[4])in[i], out[i],
                                           NULL) != 0;
        double t1 = now_ns();
        batch.count = 16;
        for (size_t i = 0; run_16 && i < vertices_total; i += 16) {
            batch.inputs = (const float(*)[16][4])in + i;
            batch.outputs = out + i;
            int32_t failed = picajit_run_vertices(engine, uniforms, &batch);
            if (failed < 0) die("run 16 vertices");
            failures += (uint32_t)failed;
        }
        double t2 = now_ns();
        batch.count = vertices_total;
        batch.inputs = (const float(*)[16][4])in;
        batch.outputs = out;
        int32_t failed = run_all ? picajit_run_vertices(engine, uniforms, &batch) : 0;
        if (failed < 0) die("run the vertices");
        failures += (uint32_t)failed;
        double t3 = now_ns();
        if (t1 - t0 < best_vertex) best_vertex = t1 - t0;
        if (t2 - t1 < best_16) best_16 = t2 - t1;
        if (t3 - t2 < best_all) best_all = t3 - t2;
    }
    double n = (double)vertices_total;
    printf("%s: %zu vertices, engine %s (%s), best of %d\n", argv[1], vertices_total,
           picajit_engine_name(engine), argv[4], repeat);
    printf("run_vertex %.1f ns/vertex, vertices16 %.1f ns/vertex, vertices %.1f ns/vertex\n",
           best_vertex / n, best_16 / n, best_all / n);
    printf("{\"run_vertex_ns\": %.3f, \"vertices16_ns\": %.3f, \"vertices_ns\": %.3f, "
           "\"failed_vertices\": %u}\n",
           best_vertex / n, best_16 / n, best_all / n, failures);
    picajit_uniforms_free(uniforms);
    picajit_engine_free(engine);
    picajit_shbin_free(shbin);
    free(in);
    free(out);
    free(input);
    free(shbin_bytes);
    return 0;
}
