//! A headless OpenGL (or OpenGL ES) context through EGL's surfaceless platform, and the run of a
//! translated vertex shader on it: the inputs as vertex attributes, the uniforms as the block,
//! the outputs captured by transform feedback with rasterisation off (docs/gpu-shaders.md,
//! "Checked on a real implementation"). On these machines that is Mesa's llvmpipe.

use std::ffi::c_void;

use glow::HasContext;
use khronos_egl as egl;

use super::{Capture, HostError};

/// EGL_PLATFORM_SURFACELESS_MESA.
const PLATFORM_SURFACELESS_MESA: egl::Enum = 0x31DD;

/// Which API the context speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenGL 3.3 core or later.
    Gl,
    /// OpenGL ES 3.0 or later.
    Gles,
}

/// A current EGL context on this thread.
pub struct GlDevice {
    egl: egl::DynamicInstance<egl::EGL1_5>,
    display: egl::Display,
    context: egl::Context,
    gl: glow::Context,
    api: Api,
    renderer: String,
}

/// A linked program and what it captures.
pub struct GlProgram {
    program: glow::Program,
    /// Bytes captured per vertex.
    pub captured_bytes: usize,
}

impl GlDevice {
    /// Opens a context of `api` on the surfaceless platform and makes it current here.
    pub fn open(api: Api) -> Result<GlDevice, HostError> {
        let unavailable =
            |what: &str, e: &dyn std::fmt::Display| HostError::Unavailable(format!("{what}: {e}"));
        // SAFETY: libEGL is the system's; the loader checks the symbols it needs.
        let egl = unsafe { egl::DynamicInstance::<egl::EGL1_5>::load_required() }
            .map_err(|e| unavailable("cannot load libEGL", &e))?;
        // SAFETY: the surfaceless platform takes no native display.
        let display = unsafe {
            egl.get_platform_display(
                PLATFORM_SURFACELESS_MESA,
                egl::DEFAULT_DISPLAY,
                &[egl::ATTRIB_NONE],
            )
        }
        .map_err(|e| unavailable("no surfaceless EGL display", &e))?;
        egl.initialize(display)
            .map_err(|e| unavailable("cannot initialise EGL", &e))?;
        let (bit, bind) = match api {
            Api::Gl => (egl::OPENGL_BIT, egl::OPENGL_API),
            Api::Gles => (egl::OPENGL_ES3_BIT, egl::OPENGL_ES_API),
        };
        let config = egl
            .choose_first_config(
                display,
                &[
                    egl::RENDERABLE_TYPE,
                    bit,
                    egl::SURFACE_TYPE,
                    egl::PBUFFER_BIT,
                    egl::NONE,
                ],
            )
            .map_err(|e| unavailable("no EGL config", &e))?
            .ok_or_else(|| HostError::Unavailable("no EGL config for the API".into()))?;
        egl.bind_api(bind)
            .map_err(|e| unavailable("cannot bind the API", &e))?;
        let attributes = match api {
            Api::Gl => vec![
                egl::CONTEXT_MAJOR_VERSION,
                3,
                egl::CONTEXT_MINOR_VERSION,
                3,
                egl::CONTEXT_OPENGL_PROFILE_MASK,
                egl::CONTEXT_OPENGL_CORE_PROFILE_BIT,
                egl::NONE,
            ],
            Api::Gles => vec![egl::CONTEXT_MAJOR_VERSION, 3, egl::NONE],
        };
        let context = egl
            .create_context(display, config, None, &attributes)
            .map_err(|e| unavailable("cannot create a context", &e))?;
        egl.make_current(display, None, None, Some(context))
            .map_err(|e| unavailable("cannot make the context current", &e))?;
        // SAFETY: the context is current on this thread; the loader returns EGL's entry points.
        let gl = unsafe {
            glow::Context::from_loader_function(|name| {
                egl.get_proc_address(name)
                    .map_or(std::ptr::null(), |f| f as *const c_void)
            })
        };
        // SAFETY: a current context.
        let renderer = unsafe {
            format!(
                "{} ({})",
                gl.get_parameter_string(glow::RENDERER),
                gl.get_parameter_string(glow::VERSION)
            )
        };
        // Drawing needs a complete framebuffer, even with rasterisation off, and a surfaceless
        // context has none: a 1x1 one of its own.
        // SAFETY: a current context.
        unsafe {
            let framebuffer = gl.create_framebuffer().map_err(HostError::Driver)?;
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(framebuffer));
            let color = gl.create_renderbuffer().map_err(HostError::Driver)?;
            gl.bind_renderbuffer(glow::RENDERBUFFER, Some(color));
            gl.renderbuffer_storage(glow::RENDERBUFFER, glow::RGBA8, 1, 1);
            gl.framebuffer_renderbuffer(
                glow::FRAMEBUFFER,
                glow::COLOR_ATTACHMENT0,
                glow::RENDERBUFFER,
                Some(color),
            );
        }
        Ok(GlDevice {
            egl,
            display,
            context,
            gl,
            api,
            renderer,
        })
    }

    /// The implementation: renderer and version strings.
    pub fn renderer(&self) -> &str {
        &self.renderer
    }

    /// The API.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The most components transform feedback captures interleaved per vertex.
    pub fn capture_limit(&self) -> usize {
        // SAFETY: a current context.
        unsafe {
            self.gl
                .get_parameter_i32(glow::MAX_TRANSFORM_FEEDBACK_INTERLEAVED_COMPONENTS)
                .max(0) as usize
        }
    }

    /// Compiles and links `vertex` (GLSL), capturing the named outputs interleaved, each 16
    /// bytes.
    pub fn compile(&self, vertex: &str, captured: &[&str]) -> Result<GlProgram, HostError> {
        self.compile_stages(vertex, None, captured)
    }

    /// Compiles and links a geometry shader (GLSL) behind a vertex shader that passes the
    /// attributes `inputs` names on as `vN`, capturing the named outputs interleaved.
    pub fn compile_geometry(
        &self,
        geometry: &str,
        inputs: u16,
        captured: &[&str],
    ) -> Result<GlProgram, HostError> {
        let mut vertex = String::from("#version 330 core\n");
        let mut body = String::new();
        for n in 0..16 {
            if inputs & (1 << n) != 0 {
                vertex += &format!("layout(location = {n}) in vec4 a{n};\nout vec4 v{n};\n");
                body += &format!("    v{n} = a{n};\n");
            }
        }
        vertex += &format!("void main() {{\n{body}    gl_Position = vec4(0.0);\n}}\n");
        self.compile_stages(&vertex, Some(geometry), captured)
    }

    fn compile_stages(
        &self,
        vertex: &str,
        geometry: Option<&str>,
        captured: &[&str],
    ) -> Result<GlProgram, HostError> {
        let gl = &self.gl;
        // SAFETY: a current context; every object made here is deleted on failure.
        unsafe {
            let shader = |kind: u32, source: &str| -> Result<glow::Shader, HostError> {
                let shader = gl.create_shader(kind).map_err(HostError::Driver)?;
                gl.shader_source(shader, source);
                gl.compile_shader(shader);
                if !gl.get_shader_compile_status(shader) {
                    let log = gl.get_shader_info_log(shader);
                    gl.delete_shader(shader);
                    return Err(HostError::Compile(log));
                }
                Ok(shader)
            };
            let vs = shader(glow::VERTEX_SHADER, vertex)?;
            let gs = match geometry {
                Some(source) => match shader(glow::GEOMETRY_SHADER, source) {
                    Ok(gs) => Some(gs),
                    Err(e) => {
                        gl.delete_shader(vs);
                        return Err(e);
                    }
                },
                None => None,
            };
            let fragment = match self.api {
                Api::Gl => None,
                // OpenGL ES links no program without a fragment shader.
                Api::Gles => Some(shader(
                    glow::FRAGMENT_SHADER,
                    "#version 300 es\nprecision mediump float;\nout vec4 color;\nvoid main() { color = vec4(0.0); }\n",
                )?),
            };
            let program = gl.create_program().map_err(HostError::Driver)?;
            gl.attach_shader(program, vs);
            if let Some(gs) = gs {
                gl.attach_shader(program, gs);
            }
            if let Some(fs) = fragment {
                gl.attach_shader(program, fs);
            }
            gl.transform_feedback_varyings(program, captured, glow::INTERLEAVED_ATTRIBS);
            gl.link_program(program);
            gl.delete_shader(vs);
            if let Some(gs) = gs {
                gl.delete_shader(gs);
            }
            if let Some(fs) = fragment {
                gl.delete_shader(fs);
            }
            if !gl.get_program_link_status(program) {
                let log = gl.get_program_info_log(program);
                gl.delete_program(program);
                return Err(HostError::Link(log));
            }
            Ok(GlProgram {
                program,
                captured_bytes: captured.len() * 16,
            })
        }
    }

    /// Runs `program` once per vertex: `inputs` holds 16 vec4s (256 bytes) per vertex, of
    /// which the attributes `input_mask` names are bound; `block` is the uniform block's bytes
    /// (`block_name`). Returns the captured bytes, vertex after vertex.
    pub fn run(
        &self,
        program: &GlProgram,
        block_name: &str,
        block: &[u8],
        inputs: &[u8],
        input_mask: u16,
    ) -> Result<Vec<u8>, HostError> {
        let vertices = inputs.len() / 256;
        let (out, written) = self.draw(
            Capture::Points,
            program,
            &[(block_name, block)],
            inputs,
            input_mask,
            vertices,
        )?;
        super::all_captured(written as u64, vertices)?;
        Ok(out)
    }

    /// Runs a geometry `program` on one point (`inputs`: 256 bytes) with the uniform `blocks`
    /// (name, bytes), capturing at most `most` primitives of `capture` (points, or the whole
    /// triangles of the triangle form's strips): returns their vertices' bytes.
    pub fn run_geometry(
        &self,
        capture: Capture,
        program: &GlProgram,
        blocks: &[(&str, &[u8])],
        inputs: &[u8],
        input_mask: u16,
        most: usize,
    ) -> Result<Vec<u8>, HostError> {
        let (mut out, written) = self.draw(capture, program, blocks, inputs, input_mask, most)?;
        out.truncate(capture.vertices() * written as usize * program.captured_bytes);
        Ok(out)
    }

    /// Draws the points of `inputs` with `blocks` bound in turn, capturing up to `primitives`
    /// primitives of `capture`: the captured bytes (room for `primitives`) and how many were
    /// written.
    fn draw(
        &self,
        capture: Capture,
        program: &GlProgram,
        blocks: &[(&str, &[u8])],
        inputs: &[u8],
        input_mask: u16,
        primitives: usize,
    ) -> Result<(Vec<u8>, u32), HostError> {
        let gl = &self.gl;
        let vertices = inputs.len() / 256;
        let mode = match capture {
            Capture::Points => glow::POINTS,
            Capture::Triangles => glow::TRIANGLES,
        };
        let records = primitives;
        let out_len = records * capture.vertices() * program.captured_bytes;
        let mut out = vec![0u8; out_len];
        if vertices == 0 || out_len == 0 {
            return Ok((out, 0));
        }
        // SAFETY: a current context; the buffers made here are sized for what is drawn and
        // deleted before returning.
        unsafe {
            gl.use_program(Some(program.program));
            let mut ubos = Vec::with_capacity(blocks.len());
            for (binding, (name, bytes)) in blocks.iter().enumerate() {
                let ubo = gl.create_buffer().map_err(HostError::Driver)?;
                gl.bind_buffer(glow::UNIFORM_BUFFER, Some(ubo));
                gl.buffer_data_u8_slice(glow::UNIFORM_BUFFER, bytes, glow::STATIC_DRAW);
                if let Some(index) = gl.get_uniform_block_index(program.program, name) {
                    gl.uniform_block_binding(program.program, index, binding as u32);
                    gl.bind_buffer_base(glow::UNIFORM_BUFFER, binding as u32, Some(ubo));
                }
                ubos.push(ubo);
            }
            let vao = gl.create_vertex_array().map_err(HostError::Driver)?;
            gl.bind_vertex_array(Some(vao));
            let vbo = gl.create_buffer().map_err(HostError::Driver)?;
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(vbo));
            gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, inputs, glow::STATIC_DRAW);
            for n in 0..16u32 {
                if input_mask & (1 << n) != 0 {
                    gl.enable_vertex_attrib_array(n);
                    gl.vertex_attrib_pointer_f32(n, 4, glow::FLOAT, false, 256, n as i32 * 16);
                }
            }
            let xfb = gl.create_buffer().map_err(HostError::Driver)?;
            gl.bind_buffer(glow::TRANSFORM_FEEDBACK_BUFFER, Some(xfb));
            gl.buffer_data_size(
                glow::TRANSFORM_FEEDBACK_BUFFER,
                out_len as i32,
                glow::STREAM_READ,
            );
            gl.bind_buffer_base(glow::TRANSFORM_FEEDBACK_BUFFER, 0, Some(xfb));
            let query = gl.create_query().map_err(HostError::Driver)?;
            gl.enable(glow::RASTERIZER_DISCARD);
            gl.begin_query(glow::TRANSFORM_FEEDBACK_PRIMITIVES_WRITTEN, query);
            gl.begin_transform_feedback(mode);
            gl.draw_arrays(glow::POINTS, 0, vertices as i32);
            gl.end_transform_feedback();
            gl.end_query(glow::TRANSFORM_FEEDBACK_PRIMITIVES_WRITTEN);
            gl.disable(glow::RASTERIZER_DISCARD);
            let written = gl.get_query_parameter_u32(query, glow::QUERY_RESULT);
            gl.delete_query(query);
            let mapped = gl.map_buffer_range(
                glow::TRANSFORM_FEEDBACK_BUFFER,
                0,
                out_len as i32,
                glow::MAP_READ_BIT,
            );
            let result = if mapped.is_null() {
                Err(HostError::Driver("cannot map the captured outputs".into()))
            } else {
                std::ptr::copy_nonoverlapping(mapped, out.as_mut_ptr(), out_len);
                gl.unmap_buffer(glow::TRANSFORM_FEEDBACK_BUFFER);
                Ok(())
            };
            let error = gl.get_error();
            gl.bind_buffer_base(glow::TRANSFORM_FEEDBACK_BUFFER, 0, None);
            gl.delete_buffer(xfb);
            gl.delete_buffer(vbo);
            gl.delete_vertex_array(vao);
            for ubo in ubos {
                gl.delete_buffer(ubo);
            }
            result?;
            if written as usize > records {
                return Err(HostError::Driver(format!(
                    "the driver reports {written} records captured into room for {records}"
                )));
            }
            if error != glow::NO_ERROR {
                return Err(HostError::Driver(format!("GL error {error:#x} in the run")));
            }
            Ok((out, written))
        }
    }

    /// Deletes `program`.
    pub fn delete(&self, program: GlProgram) {
        // SAFETY: a current context; the program is not used again.
        unsafe { self.gl.delete_program(program.program) }
    }
}

impl Drop for GlDevice {
    fn drop(&mut self) {
        let _ = self.egl.make_current(self.display, None, None, None);
        let _ = self.egl.destroy_context(self.display, self.context);
    }
}
