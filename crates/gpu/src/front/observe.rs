//! Watching the shader units at work (docs/gpu.md, "Observing shaders"): a
//! [`ShaderObserver`] set with [`Gpu::observe_shaders`] sees each vertex batch and each
//! geometry-shader invocation just before it runs, with the whole GPU as it is then (the
//! unit's program, uniforms and permutation, the output map). `picajit extract` collects the
//! real programs of a trace this way. Without an observer a draw pays one `Option` test per
//! batch and per geometry invocation.

use shader::exec::SoaBuffer;
use shader::program::InputRegisters;

use super::Gpu;

/// What sees the shader units' work.
pub trait ShaderObserver: Send {
    /// A batch of vertices is about to run on the vertex unit (`gpu.vs`) with its uniforms:
    /// `inputs` holds each vertex's input registers as the loader produced them.
    fn vertex_batch(&mut self, gpu: &Gpu, inputs: &SoaBuffer);

    /// A geometry-shader invocation is about to run on the geometry unit (`gpu.gs`) with its
    /// uniforms as they are now (the input modes have written their float uniforms already).
    fn geometry_invocation(&mut self, gpu: &Gpu, inputs: &InputRegisters);
}

impl Gpu {
    /// Shows every vertex batch and geometry-shader invocation to `observer` from now on
    /// (replacing any observer set before).
    pub fn observe_shaders(&mut self, observer: Box<dyn ShaderObserver>) {
        self.observer = Some(observer);
    }

    /// Stops observing; returns the observer.
    pub fn stop_observing(&mut self) -> Option<Box<dyn ShaderObserver>> {
        self.observer.take()
    }

    /// Calls `show` with the observer, if there is one (taken out meanwhile, so that it can
    /// see the GPU).
    pub(super) fn show_observer(&mut self, show: impl FnOnce(&mut dyn ShaderObserver, &Gpu)) {
        if let Some(mut observer) = self.observer.take() {
            show(observer.as_mut(), self);
            self.observer = Some(observer);
        }
    }
}
