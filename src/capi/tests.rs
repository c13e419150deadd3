use std::ffi::CStr;

use super::*;

fn last_message() -> String {
    // SAFETY: the library returns a NUL-terminated string that lives until the next failing call.
    unsafe { CStr::from_ptr(picajit_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn engine_constants_map_to_engine_kinds() {
    assert_eq!(engine_kind(ENGINE_BEST), Some(EngineKind::Auto));
    assert_eq!(
        engine_kind(ENGINE_VINTERP),
        Some(EngineKind::VectorInterpreter)
    );
    assert_eq!(engine_kind(ENGINE_AUTO), Some(EngineKind::Auto));
    assert_eq!(engine_kind(ENGINE_SOA_JIT), Some(EngineKind::SoaJit));
    assert_eq!(engine_kind(ENGINE_INTERP), Some(EngineKind::Interpreter));
    assert_eq!(engine_kind(ENGINE_JIT), Some(EngineKind::Jit));
    assert_eq!(engine_kind(99), None);
    assert_eq!(precision(1), Some(Precision::F24Nearest));
    assert_eq!(precision(3), None);
    assert_eq!(stage(1), Some(ShaderKind::Geometry));
    assert_eq!(stage(256), None);
}

#[test]
fn a_panic_becomes_a_status_and_a_message() {
    let status = guard("picajit_test", || panic!("boom"));
    assert_eq!(status, ERROR_PANIC);
    let message = last_message();
    assert!(
        message.starts_with("picajit_test: internal error"),
        "{message}"
    );
    assert!(message.ends_with("boom"), "{message}");
    let status = guard_status("picajit_test_status", || panic!("bang"));
    assert_eq!(status, ERROR_PANIC);
    let message = last_message();
    assert!(
        message.starts_with("picajit_test_status: internal error") && message.ends_with("bang"),
        "{message}"
    );
}

#[test]
fn errors_name_the_function_and_argument() {
    let status = guard("picajit_test", || {
        Err(CapiError::argument("batch->count", "too many"))
    });
    assert_eq!(status, ERROR_BAD_ARGUMENT);
    assert_eq!(last_message(), "picajit_test: batch->count: too many");
    let status = guard("picajit_test", || {
        Err(CapiError::Exec(ExecError::BreakOutsideLoop { pc: 2 }))
    });
    assert_eq!(status, ERROR_BREAK_OUTSIDE_LOOP);
    assert!(last_message().starts_with("picajit_test: break-outside-loop: BREAK at 0x002"));
}

#[test]
fn null_and_misaligned_pointers_are_errors() {
    // SAFETY: a null pointer is allowed (it is the case under test).
    let error = unsafe { ptr_ref::<u32>(std::ptr::null(), "x") }.unwrap_err();
    assert_eq!(error.status(), ERROR_NULL_POINTER);
    let words = [0u32; 2];
    let misaligned = (words.as_ptr() as *const u8).wrapping_add(1) as *const u32;
    // SAFETY: the pointer is rejected before it is read.
    let error = unsafe { slice_of(misaligned, 1, "x") }.unwrap_err();
    assert_eq!(error.to_string(), "x is not aligned to 4 bytes");
    // SAFETY: an empty slice reads nothing, whatever the pointer.
    assert!(
        unsafe { slice_of::<u32>(std::ptr::null(), 0, "x") }
            .unwrap()
            .is_empty()
    );
}

#[test]
fn status_names_cover_every_code() {
    for (code, name) in [
        (OK, "PICAJIT_OK"),
        (ERROR_COMPILE, "PICAJIT_ERROR_COMPILE"),
        (ERROR_INTERNAL, "PICAJIT_ERROR_INTERNAL"),
        (-100, "PICAJIT_ERROR_UNKNOWN"),
    ] {
        // SAFETY: status names are static NUL-terminated strings.
        let text = unsafe { CStr::from_ptr(picajit_status_name(code)) };
        assert_eq!(text.to_str().unwrap(), name);
    }
}

/// Engines prepared through a cache report their own program's layout, from the first upload,
/// on hits, and after the cache was cleared and every engine freed (when a new engine may take
/// a freed one's place): `mov o0, v0` reads v0, `mov o0, v3` reads v3.
#[test]
fn cached_engines_report_their_own_layout() {
    let upload = |cache: *const ProgramCacheHandle, source: u32| -> (*mut EngineHandle, u16) {
        let code = [0x4C00_0000 | source << 12, 0x8800_0000];
        let opdescs = [0x36F];
        let program = Program {
            code: code.as_ptr(),
            code_len: code.len(),
            opdescs: opdescs.as_ptr(),
            opdesc_len: opdescs.len(),
            entry: 0,
            stage: 0,
            output_mask: 1,
        };
        let mut engine = std::ptr::null_mut();
        let mut layout = Layout::default();
        // SAFETY: valid pointers to live values; `cache` is a live handle.
        unsafe {
            assert_eq!(
                picajit_engine_create(&program, std::ptr::null(), cache, &mut engine),
                OK
            );
            assert_eq!(picajit_engine_layout(engine, &mut layout), OK);
        }
        (engine, layout.input_mask)
    };
    let mut cache = std::ptr::null_mut();
    // SAFETY: `cache` is valid for a write.
    assert_eq!(unsafe { picajit_cache_create(4, &mut cache) }, OK);
    let mut engines = Vec::new();
    for round in 0..3 {
        for (source, mask) in [(0, 0x1), (3, 0x8), (0, 0x1), (3, 0x8)] {
            let (engine, inputs) = upload(cache, source);
            assert_eq!(inputs, mask, "round {round}, v{source}");
            engines.push(engine);
        }
        for engine in engines.drain(..) {
            // SAFETY: a live engine handle, freed once.
            unsafe { picajit_engine_free(engine) };
        }
        // SAFETY: a live cache handle.
        assert_eq!(unsafe { picajit_cache_clear(cache) }, OK);
    }
    // SAFETY: the live cache handle, freed once.
    unsafe { picajit_cache_free(cache) };
}

/// `picajit_uniforms_set_ints` sets i0-i3 as four `picajit_uniforms_set_int` calls do.
#[test]
fn set_ints_sets_what_four_set_int_calls_set() {
    let ints = [
        [3, 0, 1, 0],
        [1, 2, 3, 4],
        [0, 0, 0, 0],
        [255, 254, 253, 252],
    ];
    let mut one = UniformsHandle::default();
    let mut all = UniformsHandle::default();
    for (index, value) in ints.iter().enumerate() {
        // SAFETY: live values, used by nothing else meanwhile.
        assert_eq!(
            unsafe { picajit_uniforms_set_int(&mut one, index as u32, value) },
            OK
        );
    }
    // SAFETY: as above.
    assert_eq!(unsafe { picajit_uniforms_set_ints(&mut all, &ints) }, OK);
    assert_eq!(all.uniforms.int, one.uniforms.int);
    assert_eq!(all.uniforms.int, ints);
}

/// Every float-uniform write keeps the handle's record of which registers are within the
/// scalar JIT's operand bounds (`UniformsHandle::comfortable`) equal to looking at them all:
/// through each setter, in every precision mode, with values in and out of the bounds
/// (infinities, NaNs, a float24 subnormal, −0, magnitudes past 2^30 and below 2^-46).
#[test]
fn every_float_write_keeps_the_record_of_uniforms_within_the_operand_bounds() {
    use crate::float24::lanes::uniforms_within_operand_bounds;
    let all_floats = (1u128 << 96) - 1;
    let values: [[f32; 4]; 6] = [
        [1.0, -2.5, 0.0, 1e-3],
        [f32::INFINITY, 1.0, 1.0, 1.0],
        [1.0, f32::NAN, 1.0, 1.0],
        [-0.0, 1.0, 1.0, 1.0],
        [2e9, 1.0, 1.0, 1.0],
        [1e-15, 1.0, 1.0, 1.0],
    ];
    let mut u = UniformsHandle::default();
    let check = |u: &UniformsHandle, what: &str| {
        let looked = uniforms_within_operand_bounds(&u.uniforms.float, all_floats);
        assert_eq!(u.comfortable(), looked, "{what}");
    };
    check(&u, "new");
    // PICAJIT_PRECISION_F24, _F24_RNE and _F32.
    for precision in [0, 1, 2] {
        // SAFETY: a live handle used by nothing else; valid buffers of the counts given.
        unsafe {
            assert_eq!(picajit_uniforms_reset(&mut u), OK);
            for (k, value) in values.iter().enumerate() {
                let index = 10 * k as u32;
                assert_eq!(
                    picajit_uniforms_set_float(&mut u, index, value, precision),
                    OK
                );
                check(&u, "set_float");
                let count = (values.len() - k).min(2);
                let from = values[k..].as_ptr();
                assert_eq!(
                    picajit_uniforms_set_floats(&mut u, index + 1, count, from, precision),
                    OK
                );
                check(&u, "set_floats");
                let words = value.map(f32::to_bits);
                let words = [words[3], words[2], words[1], words[0]];
                assert_eq!(
                    picajit_uniforms_set_float_f32_words(&mut u, index + 3, &words, precision),
                    OK
                );
                check(&u, "set_float_f32_words");
            }
            // A float24 subnormal (exponent 0, mantissa 1) and a float24 one, exactly.
            for (index, word) in [(90u32, 0x00_0001u32), (91, 0x3F_0000)] {
                let group = [0, 0, word];
                assert_eq!(
                    picajit_uniforms_set_float_f24_words(&mut u, index, &group),
                    OK
                );
                check(&u, "set_float_f24_words");
            }
            let groups = [[0u32, 0, 0x7F_0000], [0, 0, 0x3F_0000]];
            assert_eq!(
                picajit_uniforms_set_floats_f24_words(&mut u, 92, 2, groups.as_ptr()),
                OK
            );
            check(&u, "set_floats_f24_words");
        }
        assert_ne!(
            u.comfortable(),
            all_floats,
            "some written values are out of bounds"
        );
    }
}
