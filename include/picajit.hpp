/* picajit.hpp: the C ABI of include/picajit.h as C++ (C++17, header-only; docs/c-abi.md).
 *
 * - Every handle has an owner class (move-only; it frees the handle when destroyed): cache,
 *   shbin, engine, uniforms, geometry_state, translation. `get()` gives the C handle for mixing with the C
 *   functions.
 * - A failing call throws picajit::error, which carries the PICAJIT_* status and the library's
 *   message. run_batch returns the number of failed vertices (per-vertex failures are results,
 *   not exceptions); run_vertex and run_geometry throw for a failed invocation.
 * - Geometry-shader emissions go to std::function callbacks. An exception a callback throws never
 *   crosses into the library: it is caught in the trampoline, the later emissions of that
 *   invocation are dropped, and it is rethrown from run_geometry once the library has returned.
 */
#ifndef PICAJIT_HPP
#define PICAJIT_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "picajit.h"

namespace picajit {

/* A failed call: its PICAJIT_* status and the library's message. */
class error : public std::runtime_error {
public:
    error(int32_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    int32_t status() const noexcept { return status_; }
    /* Whether an invocation failed (PICAJIT_ERROR_BREAK_OUTSIDE_LOOP, ...), not an argument. */
    bool is_execution_error() const noexcept { return PICAJIT_IS_EXEC_ERROR(status_); }

private:
    int32_t status_;
};

namespace detail {

/* Throws for a status other than PICAJIT_OK, with the thread's last message. */
inline void check(int32_t status) {
    if (status != PICAJIT_OK) {
        throw error(status, picajit_last_error_message());
    }
}

/* Throws for a negative status; a count is success. */
inline void check_count(int32_t status) {
    if (status < 0) {
        throw error(status, picajit_last_error_message());
    }
}

/* A move-only owner of one handle type, freed by `Free`. */
template <class Handle, void (*Free)(Handle *)> class owner {
public:
    owner() noexcept = default;
    explicit owner(Handle *handle) noexcept : handle_(handle) {}
    owner(const owner &) = delete;
    owner &operator=(const owner &) = delete;
    owner(owner &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    owner &operator=(owner &&other) noexcept {
        if (this != &other) {
            Free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    ~owner() { Free(handle_); }
    Handle *get() const noexcept { return handle_; }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    Handle *handle_ = nullptr;
};

} // namespace detail

/* A program cache, shared by any number of threads (picajit_cache_*). */
class cache {
public:
    /* At most `capacity` programs (0: 128). */
    explicit cache(std::size_t capacity = 0) {
        picajit_cache *handle = nullptr;
        detail::check(picajit_cache_create(capacity, &handle));
        owner_ = decltype(owner_)(handle);
    }
    picajit_cache_stats stats() const {
        picajit_cache_stats out{};
        detail::check(picajit_cache_get_stats(get(), &out));
        return out;
    }
    void clear() const { detail::check(picajit_cache_clear(get())); }
    picajit_cache *get() const noexcept { return owner_.get(); }

private:
    detail::owner<picajit_cache, picajit_cache_free> owner_;
};

/* A parsed SHBIN blob (picajit_shbin_*). */
class shbin {
public:
    /* Parses (and copies) `len` bytes; a malformed blob throws PICAJIT_ERROR_BAD_SHBIN. */
    shbin(const std::uint8_t *data, std::size_t len) {
        picajit_shbin *handle = nullptr;
        detail::check(picajit_shbin_parse(data, len, &handle));
        owner_ = decltype(owner_)(handle);
    }
    std::uint32_t dvle_count() const {
        std::uint32_t out = 0;
        detail::check(picajit_shbin_dvle_count(get(), &out));
        return out;
    }
    picajit_dvle_info dvle_info(std::uint32_t dvle) const {
        picajit_dvle_info out{};
        detail::check(picajit_shbin_dvle_info(get(), dvle, &out));
        return out;
    }
    /* The blob's program memory (owned by this object). */
    struct program_words {
        const std::uint32_t *code;
        std::size_t code_len;
        const std::uint32_t *opdescs;
        std::size_t opdesc_len;
    };
    program_words program() const {
        program_words out{};
        detail::check(
            picajit_shbin_program(get(), &out.code, &out.code_len, &out.opdescs, &out.opdesc_len));
        return out;
    }
    picajit_shbin *get() const noexcept { return owner_.get(); }

private:
    detail::owner<picajit_shbin, picajit_shbin_free> owner_;
};

/* Float, int and bool uniforms (picajit_uniforms_*; docs/execution-model.md section 7). */
class uniforms {
public:
    uniforms() {
        picajit_uniforms *handle = nullptr;
        detail::check(picajit_uniforms_create(&handle));
        owner_ = decltype(owner_)(handle);
    }
    void reset() { detail::check(picajit_uniforms_reset(get())); }
    void set_float(std::uint32_t index, const float (&xyzw)[4],
                   std::uint32_t precision = PICAJIT_PRECISION_F24) {
        detail::check(picajit_uniforms_set_float(get(), index, xyzw, precision));
    }
    void set_floats(std::uint32_t first, const float (*xyzw)[4], std::size_t count,
                    std::uint32_t precision = PICAJIT_PRECISION_F24) {
        detail::check(picajit_uniforms_set_floats(get(), first, count, xyzw, precision));
    }
    void set_float_f24_words(std::uint32_t index, const std::uint32_t (&words)[3]) {
        detail::check(picajit_uniforms_set_float_f24_words(get(), index, words));
    }
    void set_floats_f24_words(std::uint32_t first, const std::uint32_t (*words)[3],
                              std::size_t count) {
        detail::check(picajit_uniforms_set_floats_f24_words(get(), first, count, words));
    }
    void set_float_f32_words(std::uint32_t index, const std::uint32_t (&words)[4],
                             std::uint32_t precision = PICAJIT_PRECISION_F24) {
        detail::check(picajit_uniforms_set_float_f32_words(get(), index, words, precision));
    }
    void set_floats_f32_words(std::uint32_t first, const std::uint32_t (*words)[4],
                              std::size_t count, std::uint32_t precision = PICAJIT_PRECISION_F24) {
        detail::check(
            picajit_uniforms_set_floats_f32_words(get(), first, count, words, precision));
    }
    void set_int(std::uint32_t index, const std::uint8_t (&xyzw)[4]) {
        detail::check(picajit_uniforms_set_int(get(), index, xyzw));
    }
    void set_ints(const std::uint8_t (&ints)[4][4]) {
        detail::check(picajit_uniforms_set_ints(get(), ints));
    }
    void set_bools(std::uint16_t bools) { detail::check(picajit_uniforms_set_bools(get(), bools)); }
    void apply_constants(const shbin &blob, std::uint32_t dvle) {
        detail::check(picajit_uniforms_apply_constants(get(), blob.get(), dvle));
    }
    /* The register value of c`index`. */
    void get_float(std::uint32_t index, float (&out)[4]) const {
        detail::check(picajit_uniforms_get_float(get(), index, out));
    }
    std::uint16_t bools() const {
        std::uint16_t out = 0;
        detail::check(picajit_uniforms_get_bools(get(), &out));
        return out;
    }
    /* The uniform block of a translation for these values (PICAJIT_UNIFORM_BLOCK_BYTES). */
    std::vector<std::uint8_t> block() const {
        std::vector<std::uint8_t> out(PICAJIT_UNIFORM_BLOCK_BYTES);
        detail::check_count(picajit_uniforms_block(get(), out.data(), out.size()));
        return out;
    }
    picajit_uniforms *get() const noexcept { return owner_.get(); }

private:
    detail::owner<picajit_uniforms, picajit_uniforms_free> owner_;
};

/* A program translated for host GPUs (picajit_translate*; docs/gpu-shaders.md): exact GLSL
 * and its interface. A geometry shader in GLSL ES 3.00 throws
 * PICAJIT_ERROR_UNSUPPORTED. */
class translation {
public:
    /* Translates an upload as `options` say (nullptr: defaults). */
    explicit translation(const picajit_program &program,
                         const picajit_translate_options *options = nullptr) {
        picajit_translation *handle = nullptr;
        detail::check(picajit_translate(&program, options, &handle));
        owner_ = decltype(owner_)(handle);
    }
    /* Translates DVLE `dvle` of a SHBIN blob (comments name the registers it names). */
    translation(const shbin &blob, std::uint32_t dvle,
                const picajit_translate_options *options = nullptr) {
        picajit_translation *handle = nullptr;
        detail::check(picajit_translate_shbin(blob.get(), dvle, options, &handle));
        owner_ = decltype(owner_)(handle);
    }
    /* The source, NUL-terminated, alive as long as this object. */
    const char *source() const noexcept { return picajit_translation_source(get()); }
    picajit_translation_info info() const {
        picajit_translation_info out{};
        detail::check(picajit_translation_get_info(get(), &out));
        return out;
    }
    picajit_translation *get() const noexcept { return owner_.get(); }

private:
    detail::owner<picajit_translation, picajit_translation_free> owner_;
};

/* The state of one draw's geometry-shader invocations (picajit_geometry_state_*). */
class geometry_state {
public:
    geometry_state() {
        picajit_geometry_state *handle = nullptr;
        detail::check(picajit_geometry_state_create(&handle));
        owner_ = decltype(owner_)(handle);
    }
    void reset() { detail::check(picajit_geometry_state_reset(get())); }
    picajit_geometry_state *get() const noexcept { return owner_.get(); }

private:
    detail::owner<picajit_geometry_state, picajit_geometry_state_free> owner_;
};

/* Where a geometry-shader invocation's emissions go: each may be empty (dropped). */
struct emissions {
    /* SETEMIT vertex id, primitive and winding flags, the emitting bank's o0-o15. */
    std::function<void(std::uint32_t vertex_id, bool primitive, bool winding,
                       const float (*outputs)[4])>
        vertex;
    /* A triangle: the winding flag and the three vertex slots (o0-o15 each). */
    std::function<void(bool winding, const float (*slots)[16][4])> primitive;
};

/* A prepared program (picajit_engine_*): immutable, run from any number of threads. */
class engine {
public:
    /* Prepares `program` with `config` (nullptr: defaults), through `through` when given. */
    explicit engine(const picajit_program &program, const picajit_config *config = nullptr,
                    const cache *through = nullptr) {
        picajit_engine *handle = nullptr;
        detail::check(picajit_engine_create(&program, config,
                                            through ? through->get() : nullptr, &handle));
        owner_ = decltype(owner_)(handle);
    }
    /* DVLE `dvle` of a parsed SHBIN blob. */
    engine(const shbin &blob, std::uint32_t dvle, const picajit_config *config = nullptr,
           const cache *through = nullptr) {
        picajit_engine *handle = nullptr;
        detail::check(picajit_engine_create_from_shbin(
            blob.get(), dvle, config, through ? through->get() : nullptr, &handle));
        owner_ = decltype(owner_)(handle);
    }
    picajit_layout layout() const {
        picajit_layout out{};
        detail::check(picajit_engine_layout(get(), &out));
        return out;
    }
    /* "interp", "jit", "soa-jit", "vinterp", "auto". */
    const char *name() const noexcept { return picajit_engine_name(get()); }
    /* Where the background compiles stand for calls with `values`: PICAJIT_COMPILE_*. */
    std::uint32_t compile_status(const uniforms &values) const {
        std::uint32_t status = 0;
        detail::check(picajit_engine_compile_status(get(), values.get(), &status));
        return status;
    }
    /* Compiles what is left for calls with `values` and waits for it. */
    void wait_compiled(const uniforms &values) const {
        detail::check(picajit_engine_wait_compiled(get(), values.get()));
    }

    /* One vertex: o0-o15 to `outputs`; throws for a failed invocation too. */
    void run_vertex(const uniforms &values, const float (&inputs)[16][4], float (&outputs)[16][4],
                    picajit_flow *flow = nullptr) const {
        detail::check(picajit_run_vertex(get(), values.get(), inputs, outputs, flow));
    }
    /* A batch: returns how many vertices failed (described in batch.errors); throws for an
     * argument error. */
    std::int32_t run_batch(const uniforms &values, const picajit_batch &batch) const {
        const std::int32_t failed = picajit_run_batch(get(), values.get(), &batch);
        if (failed < 0) {
            throw error(failed, picajit_last_error_message());
        }
        return failed;
    }
    /* A batch in the emulator's layout: returns how many vertices failed; throws for an
     * argument error. */
    std::int32_t run_vertices(const uniforms &values, const picajit_vertices &vertices) const {
        const std::int32_t failed = picajit_run_vertices(get(), values.get(), &vertices);
        if (failed < 0) {
            throw error(failed, picajit_last_error_message());
        }
        return failed;
    }
    /* One geometry-shader invocation on `state`, its emissions to `to`. An exception from a
     * callback is rethrown here, after the library returned. */
    void run_geometry(geometry_state &state, const uniforms &values,
                      const float (&inputs)[16][4], const emissions &to) const {
        trampoline context{&to, nullptr};
        picajit_emit_callbacks callbacks{};
        callbacks.user = &context;
        callbacks.vertex = to.vertex ? &trampoline::on_vertex : nullptr;
        callbacks.primitive = to.primitive ? &trampoline::on_primitive : nullptr;
        const std::int32_t status =
            picajit_run_geometry(get(), state.get(), values.get(), inputs, &callbacks);
        if (context.thrown) {
            std::rethrow_exception(context.thrown);
        }
        detail::check(status);
    }
    picajit_engine *get() const noexcept { return owner_.get(); }

private:
    /* The C callbacks: they call the std::functions and keep the first exception. */
    struct trampoline {
        const emissions *to;
        std::exception_ptr thrown;

        static void on_vertex(void *user, std::uint32_t vertex_id, std::uint32_t primitive,
                              std::uint32_t winding, const float (*outputs)[4]) noexcept {
            auto *self = static_cast<trampoline *>(user);
            if (self->thrown) {
                return;
            }
            try {
                self->to->vertex(vertex_id, primitive != 0, winding != 0, outputs);
            } catch (...) {
                self->thrown = std::current_exception();
            }
        }
        static void on_primitive(void *user, std::uint32_t winding,
                                 const float (*slots)[16][4]) noexcept {
            auto *self = static_cast<trampoline *>(user);
            if (self->thrown) {
                return;
            }
            try {
                self->to->primitive(winding != 0, slots);
            } catch (...) {
                self->thrown = std::current_exception();
            }
        }
    };

    detail::owner<picajit_engine, picajit_engine_free> owner_;
};

} // namespace picajit

#endif /* PICAJIT_HPP */
