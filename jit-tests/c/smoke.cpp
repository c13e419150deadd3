/* The C ABI from C++ through include/picajit.hpp: jit-tests/c_abi.rs compiles this file
 * (C++17) against the static library and runs it with the lit-transform SHBIN. It checks the
 * owner classes, the exceptions (status and message), a vertex, a batch, a SHBIN through a
 * cache, and geometry-shader emissions to std::function callbacks, including an exception
 * thrown by a callback, which must come out of run_geometry, not cross into the library.
 * Every check prints "ok: ..." or "FAILED: ..."; the exit status is the number of failures. */
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "picajit.hpp"

static int checks = 0, failures = 0;

static void check(bool ok, const char *what) {
    checks++;
    if (ok) {
        std::printf("ok: %s\n", what);
    } else {
        failures++;
        std::printf("FAILED: %s\n", what);
    }
}

static std::uint32_t bits_of(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* mov o0, v0; cmp c0, gt, gt, v0; breakc cmp.x; end: v0.x < 0 breaks outside a loop. */
static const std::uint32_t break_code[] = {0x4C000000u, 0xBC820000u, 0x8F800000u, 0x88000000u};
static const std::uint32_t break_opdescs[] = {0x0006C36Fu};

/* The strip geometry shader of smoke.c: two triangles per invocation. */
static const std::uint32_t strip_code[] = {
    0x4C000000u, 0xAC000000u, 0xA8000000u, 0x4C001000u, 0xAD000000u, 0xA8000000u, 0x4C002000u,
    0xAE800000u, 0xA8000000u, 0x4C003000u, 0xADC00000u, 0xA8000000u, 0x88000000u,
};
static const std::uint32_t strip_opdescs[] = {0x0000036Fu};

static picajit_program program_of(const std::uint32_t *code, std::size_t code_len,
                                  const std::uint32_t *opdescs, std::uint32_t stage) {
    picajit_program program{};
    program.code = code;
    program.code_len = code_len;
    program.opdescs = opdescs;
    program.opdesc_len = 1;
    program.stage = stage;
    program.output_mask = 0x1;
    return program;
}

static void errors_are_exceptions() {
    picajit::uniforms uniforms;
    const float zero[4] = {0, 0, 0, 0};
    try {
        uniforms.set_float(96, zero);
        check(false, "c96 throws");
    } catch (const picajit::error &e) {
        check(e.status() == PICAJIT_ERROR_BAD_ARGUMENT && !e.is_execution_error() &&
                  std::string(e.what()).find("c96") != std::string::npos,
              "c96 throws picajit::error: PICAJIT_ERROR_BAD_ARGUMENT, a message naming c96");
    }
    try {
        const std::uint8_t garbage[8] = {1, 2, 3};
        picajit::shbin blob(garbage, sizeof garbage);
        check(false, "a malformed SHBIN throws");
    } catch (const picajit::error &e) {
        check(e.status() == PICAJIT_ERROR_BAD_SHBIN, "a malformed SHBIN throws BAD_SHBIN");
    }
}

static void vertices() {
    const picajit_program program =
        program_of(break_code, 4, break_opdescs, PICAJIT_STAGE_VERTEX);
    picajit::engine engine(program);
    picajit::uniforms uniforms;
    float in[16][4] = {{0.1f, 2, 3, 4}}, out[16][4];
    engine.run_vertex(uniforms, in, out);
    check(bits_of(out[0][0]) == 0x3DCCCC80u && out[0][1] == 2.0f,
          "run_vertex: o0 = v0 as a float24 (0.1f enters as 0x3DCCCC80)");
    in[0][0] = -1;
    try {
        engine.run_vertex(uniforms, in, out);
        check(false, "a failing vertex throws");
    } catch (const picajit::error &e) {
        check(e.is_execution_error() && e.status() == PICAJIT_ERROR_BREAK_OUTSIDE_LOOP,
              "a failing vertex throws an execution error (break-outside-loop)");
    }

    enum { N = 6 };
    float planes[4 * N], outputs[4 * N];
    for (int i = 0; i < N; i++) {
        planes[i] = static_cast<float>(i - 2); /* vertices 0 and 1 are negative: they fail */
        planes[N + i] = planes[2 * N + i] = planes[3 * N + i] = 1.0f;
    }
    picajit_vertex_error errors[N];
    picajit_batch batch{};
    batch.count = N;
    batch.inputs = planes;
    batch.input_mask = 0x1;
    batch.input_stride = N;
    batch.outputs = outputs;
    batch.output_mask = 0x1;
    batch.output_stride = N;
    batch.errors = errors;
    batch.error_capacity = N;
    check(engine.run_batch(uniforms, batch) == 2 && errors[1].vertex == 1 && outputs[5] == 3.0f,
          "run_batch returns the failed vertices (2) and runs the others");
    batch.output_stride = 1;
    try {
        engine.run_batch(uniforms, batch);
        check(false, "a bad batch throws");
    } catch (const picajit::error &e) {
        check(e.status() == PICAJIT_ERROR_BAD_ARGUMENT, "a bad batch throws BAD_ARGUMENT");
    }

    /* The same vertices in the emulator's layout, only o0 written. */
    float vin[N][16][4] = {}, vout[N][16][4] = {};
    for (int i = 0; i < N; i++) {
        for (int c = 0; c < 4; c++) vin[i][0][c] = planes[c * N + i];
        vout[i][1][0] = 9.0f;
    }
    picajit_vertices vertices{};
    vertices.count = N;
    vertices.inputs = vin;
    vertices.input_mask = 0x1;
    vertices.outputs = vout;
    vertices.output_mask = 0x1;
    vertices.errors = errors;
    vertices.error_capacity = N;
    check(engine.run_vertices(uniforms, vertices) == 2 && vout[5][0][0] == 3.0f &&
              vout[5][1][0] == 9.0f,
          "run_vertices returns the failed vertices (2), writes o0 and leaves o1");
    engine.wait_compiled(uniforms);
    check(engine.compile_status(uniforms) == PICAJIT_COMPILE_READY,
          "after wait_compiled the engine is ready");

    picajit::engine moved = std::move(engine);
    check(moved.get() != nullptr && engine.get() == nullptr && std::strlen(moved.name()) > 0,
          "an engine moves: the new owner holds it, the old one nothing");
}

static void shbin_through_a_cache(const char *path) {
    std::ifstream file(path, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                    std::istreambuf_iterator<char>());
    picajit::shbin blob(bytes.data(), bytes.size());
    bytes.clear();
    picajit::cache cache;
    picajit::engine first(blob, 0, nullptr, &cache);
    const picajit::shbin::program_words words = blob.program();
    const picajit_dvle_info info = blob.dvle_info(0);
    picajit_program program{};
    program.code = words.code;
    program.code_len = words.code_len;
    program.opdescs = words.opdescs;
    program.opdesc_len = words.opdesc_len;
    program.entry = info.entry;
    program.stage = info.stage;
    program.output_mask = info.output_mask;
    picajit::engine second(program, nullptr, &cache);
    const picajit_cache_stats stats = cache.stats();
    check(blob.dvle_count() == 1 && stats.misses == 1 && stats.hits == 1,
          "a SHBIN's DVLE and its words through a cache: one compile, one hit");
    check(first.layout().input_mask == 0x000F, "the lit-transform program reads v0-v3");
    picajit::uniforms uniforms;
    uniforms.apply_constants(blob, 0);
    float c95[4];
    uniforms.get_float(95, c95);
    check(c95[1] == 0.25f, "the DVLE's constants applied (c95.y = 0.25)");

    const picajit::translation glsl(blob, 0);
    const picajit_translation_info interface = glsl.info();
    check(std::strncmp(glsl.source(), "#version 330 core", 17) == 0 &&
              interface.source_bytes == std::strlen(glsl.source()) &&
              interface.input_mask == 0x000F && interface.output_mask == 0x0007,
          "a translation's source and interface (v0-v3 in, o0-o2 out)");
    const std::vector<std::uint8_t> block = uniforms.block();
    std::uint32_t c95y = 0;
    std::memcpy(&c95y, block.data() + interface.float_offset + 95 * 16 + 4, 4);
    check(block.size() == interface.block_bytes && c95y == bits_of(0.25f),
          "the uniform block holds c95.y's bits where the interface says");
    program.stage = PICAJIT_STAGE_GEOMETRY;
    const picajit::translation geometry_glsl(program);
    check(geometry_glsl.info().stage == PICAJIT_STAGE_GEOMETRY &&
              std::strstr(geometry_glsl.source(), "layout(points) in;") != nullptr,
          "a geometry shader translates to a GLSL geometry shader");
    picajit_translate_options es300 = {};
    es300.language = PICAJIT_LANGUAGE_GLSL_ES300;
    try {
        const picajit::translation refused(program, &es300);
        check(false, "a geometry shader's translation to GLSL ES 3.00 throws");
    } catch (const picajit::error &e) {
        check(e.status() == PICAJIT_ERROR_UNSUPPORTED,
              "a geometry shader's translation to GLSL ES 3.00 throws PICAJIT_ERROR_UNSUPPORTED");
    }
}

static void geometry() {
    const picajit_program program =
        program_of(strip_code, sizeof strip_code / sizeof strip_code[0], strip_opdescs,
                   PICAJIT_STAGE_GEOMETRY);
    picajit::engine engine(program);
    picajit::uniforms uniforms;
    picajit::geometry_state state;
    const float in[16][4] = {{10, 0, 0, 1}, {11, 0, 0, 1}, {12, 0, 0, 1}, {13, 0, 0, 1}};

    std::vector<float> xs;
    std::vector<bool> windings;
    picajit::emissions to;
    to.vertex = [&](std::uint32_t, bool, bool, const float(*outputs)[4]) {
        xs.push_back(outputs[0][0]);
    };
    to.primitive = [&](bool winding, const float(*)[16][4]) { windings.push_back(winding); };
    engine.run_geometry(state, uniforms, in, to);
    check(xs.size() == 4 && xs[0] == 10 && xs[3] == 13 && windings.size() == 2 && !windings[0] &&
              windings[1],
          "std::function callbacks receive 4 vertices and 2 triangles, the second inverted");

    int calls = 0;
    picajit::emissions throwing;
    throwing.vertex = [&](std::uint32_t, bool, bool, const float(*)[4]) {
        calls++;
        throw std::runtime_error("from the callback");
    };
    try {
        engine.run_geometry(state, uniforms, in, throwing);
        check(false, "a callback's exception comes out of run_geometry");
    } catch (const std::runtime_error &e) {
        check(std::string(e.what()) == "from the callback" && calls == 1,
              "a callback's exception comes out of run_geometry, later emissions dropped");
    }
    xs.clear();
    engine.run_geometry(state, uniforms, in, to);
    check(xs.size() == 4, "the state runs on after a callback threw");
    state.reset();
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: smoke-cpp LIT-TRANSFORM.SHBIN\n");
        return 2;
    }
    try {
        errors_are_exceptions();
        vertices();
        shbin_through_a_cache(argv[1]);
        geometry();
    } catch (const std::exception &e) {
        check(false, e.what());
    }
    std::printf("smoke-cpp: %d checks, %d failed\n", checks, failures);
    return failures;
}
