//! What a translation presents to the code around it (docs/gpu-shaders.md, "Interface"):
//! attributes v0-v15 at locations 0-15, one uniform block in the PICA's layout, outputs
//! o0-o15.

/// How the output registers appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStyle {
    /// `out vec4 oN;` varyings, read by the next stage (or transform feedback).
    Varyings,
    /// Plain globals `vec4 oN;` that the caller's own `main` maps (the output map stays the
    /// caller's); the translation's entry point is then a function the caller calls.
    Globals,
}

/// The interface a translation is printed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// The uniform block's name.
    pub block_name: String,
    /// How the outputs appear.
    pub outputs: OutputStyle,
    /// Comment lines printed at the top (each starting with `//`).
    pub banner: String,
    /// The entry point's name: `main`, or the function a caller's `main` calls.
    pub entry: String,
}

impl Default for Interface {
    fn default() -> Interface {
        Interface {
            block_name: "pica_uniforms".to_string(),
            outputs: OutputStyle::Varyings,
            banner: String::new(),
            entry: "main".to_string(),
        }
    }
}
