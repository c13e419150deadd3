//! A headless Vulkan device (Mesa's lavapipe where there is no GPU): SPIR-V modules compiled
//! into pipelines of a vertex stage, and a geometry stage where the device has them, with
//! rasterization discarded, their outputs captured by transform feedback
//! (`VK_EXT_transform_feedback`) and read back.
//!
//! The library is loaded at run time (`libvulkan.so.1`): a machine without Vulkan gets
//! [`HostError::Unavailable`], never a link failure.

use std::ffi::{CStr, c_char};
use std::time::Duration;

use ash::vk;

use super::{Capture, HostError};

/// How long one run may take before it is reported as a driver failure: far more than the
/// greatest instruction budget takes on a software driver.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// The bytes of one vertex's inputs: v0-v15, four f32 each.
const VERTEX_BYTES: u32 = 256;

/// A Vulkan device and what every pipeline shares.
pub struct VkDevice {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    xfb: ash::ext::transform_feedback::Device,
    queue: vk::Queue,
    command_pool: vk::CommandPool,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    memory: vk::PhysicalDeviceMemoryProperties,
    renderer: String,
    capture_stride: u32,
    geometry_shaders: bool,
}

/// A SPIR-V module compiled into a pipeline (with the vertex stage in front of it, for a
/// geometry shader).
pub struct VkProgram {
    modules: Vec<vk::ShaderModule>,
    pipeline: vk::Pipeline,
    stride: u32,
    input_mask: u16,
}

fn driver(what: &str) -> impl Fn(vk::Result) -> HostError + '_ {
    move |e| HostError::Driver(format!("{what}: {e}"))
}

/// A buffer and its host-visible memory.
struct HostBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
}

impl VkDevice {
    /// Loads the library, creates an instance and a device with transform feedback and dynamic
    /// rendering (Vulkan 1.3).
    pub fn open() -> Result<VkDevice, HostError> {
        // SAFETY: loading the system's Vulkan loader runs its initialisation, which is the
        // documented way to use it.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| HostError::Unavailable(format!("no Vulkan library: {e}")))?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"picajit")
            .api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: valid create info; the instance is destroyed in `drop` or below on failure.
        let instance = unsafe { entry.create_instance(&info, None) }
            .map_err(|e| HostError::Unavailable(format!("no Vulkan instance: {e}")))?;
        match Self::with_instance(entry, instance.clone()) {
            Ok(device) => Ok(device),
            Err(e) => {
                // SAFETY: nothing made from the instance survives the failure.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn with_instance(entry: ash::Entry, instance: ash::Instance) -> Result<VkDevice, HostError> {
        // SAFETY: a live instance; every handle queried belongs to it.
        unsafe {
            let physicals = instance
                .enumerate_physical_devices()
                .map_err(|e| HostError::Unavailable(format!("no Vulkan device: {e}")))?;
            let mut chosen = None;
            for physical in physicals {
                let properties = instance.get_physical_device_properties(physical);
                if properties.api_version < vk::API_VERSION_1_3 {
                    continue;
                }
                let extensions = instance
                    .enumerate_device_extension_properties(physical)
                    .unwrap_or_default();
                let has_xfb = extensions.iter().any(|e| {
                    CStr::from_ptr(e.extension_name.as_ptr()) == ash::ext::transform_feedback::NAME
                });
                let Some(family) = instance
                    .get_physical_device_queue_family_properties(physical)
                    .iter()
                    .position(|q| q.queue_flags.contains(vk::QueueFlags::GRAPHICS))
                else {
                    continue;
                };
                if has_xfb {
                    chosen = Some((physical, properties, family as u32));
                    break;
                }
            }
            let (physical, properties, family) = chosen.ok_or_else(|| {
                HostError::Unavailable("no Vulkan 1.3 device with VK_EXT_transform_feedback".into())
            })?;
            let mut xfb_properties = vk::PhysicalDeviceTransformFeedbackPropertiesEXT::default();
            let mut all = vk::PhysicalDeviceProperties2::default().push_next(&mut xfb_properties);
            instance.get_physical_device_properties2(physical, &mut all);
            let capture_stride = xfb_properties
                .max_transform_feedback_buffer_data_stride
                .min(xfb_properties.max_transform_feedback_stream_data_size)
                .min(xfb_properties.max_transform_feedback_buffer_data_size);
            let name = CStr::from_ptr(properties.device_name.as_ptr())
                .to_string_lossy()
                .into_owned();
            let version = properties.api_version;
            let renderer = format!(
                "{name}, Vulkan {}.{}.{}",
                vk::api_version_major(version),
                vk::api_version_minor(version),
                vk::api_version_patch(version)
            );

            let geometry_shaders = instance
                .get_physical_device_features(physical)
                .geometry_shader
                == vk::TRUE;
            let features = vk::PhysicalDeviceFeatures::default().geometry_shader(geometry_shaders);
            let mut xfb_features =
                vk::PhysicalDeviceTransformFeedbackFeaturesEXT::default().transform_feedback(true);
            let mut features13 =
                vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(true);
            let priorities = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family)
                .queue_priorities(&priorities)];
            let extensions: [*const c_char; 1] = [ash::ext::transform_feedback::NAME.as_ptr()];
            let info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&extensions)
                .enabled_features(&features)
                .push_next(&mut xfb_features)
                .push_next(&mut features13);
            let device = instance
                .create_device(physical, &info, None)
                .map_err(|e| HostError::Unavailable(format!("no Vulkan device: {e}")))?;
            let xfb = ash::ext::transform_feedback::Device::new(&instance, &device);
            let queue = device.get_device_queue(family, 0);
            let memory = instance.get_physical_device_memory_properties(physical);
            let made = (|| -> Result<_, HostError> {
                let command_pool = device
                    .create_command_pool(
                        &vk::CommandPoolCreateInfo::default()
                            .queue_family_index(family)
                            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                        None,
                    )
                    .map_err(driver("command pool"))?;
                let stages = if geometry_shaders {
                    vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::GEOMETRY
                } else {
                    vk::ShaderStageFlags::VERTEX
                };
                let bindings =
                    [crate::spv::BLOCK_BINDING, crate::spv::GEOMETRY_BINDING].map(|binding| {
                        vk::DescriptorSetLayoutBinding::default()
                            .binding(binding)
                            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
                            .descriptor_count(1)
                            .stage_flags(stages)
                    });
                let set_layout = device
                    .create_descriptor_set_layout(
                        &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                        None,
                    )
                    .map_err(driver("descriptor set layout"))?;
                let layouts = [set_layout];
                let pipeline_layout = device
                    .create_pipeline_layout(
                        &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts),
                        None,
                    )
                    .map_err(driver("pipeline layout"))?;
                Ok((command_pool, set_layout, pipeline_layout))
            })();
            let (command_pool, set_layout, pipeline_layout) = match made {
                Ok(m) => m,
                Err(e) => {
                    device.destroy_device(None);
                    return Err(e);
                }
            };
            Ok(VkDevice {
                _entry: entry,
                instance,
                device,
                xfb,
                queue,
                command_pool,
                set_layout,
                pipeline_layout,
                memory,
                renderer,
                capture_stride,
                geometry_shaders,
            })
        }
    }

    /// The device's name and Vulkan version.
    pub fn renderer(&self) -> &str {
        &self.renderer
    }

    /// How many bytes one vertex's capture may hold.
    pub fn capture_limit(&self) -> usize {
        self.capture_stride as usize
    }

    /// Whether the device runs geometry shaders.
    pub fn has_geometry_shaders(&self) -> bool {
        self.geometry_shaders
    }

    /// Compiles `words` (a vertex module whose outputs are decorated for capture into buffer
    /// 0 with a stride of `stride` bytes) reading the inputs in `input_mask`.
    pub fn compile(
        &self,
        words: &[u32],
        input_mask: u16,
        stride: u32,
    ) -> Result<VkProgram, HostError> {
        self.compile_stages(&[(vk::ShaderStageFlags::VERTEX, words)], input_mask, stride)
    }

    /// Compiles `words` (a geometry module taking points, its captured outputs decorated for
    /// buffer 0 with a stride of `stride` bytes) behind a vertex stage that passes the inputs
    /// in `input_mask` on ([`crate::geometry::vertex_stage`]).
    pub fn compile_geometry(
        &self,
        words: &[u32],
        input_mask: u16,
        stride: u32,
    ) -> Result<VkProgram, HostError> {
        if !self.geometry_shaders {
            return Err(HostError::Unavailable(format!(
                "{} has no geometry shaders",
                self.renderer
            )));
        }
        let vertex = crate::spv::print(
            &crate::geometry::vertex_stage(input_mask),
            &crate::interface::Interface::default(),
            &crate::spv::SpirvOptions::default(),
        );
        self.compile_stages(
            &[
                (vk::ShaderStageFlags::VERTEX, &vertex),
                (vk::ShaderStageFlags::GEOMETRY, words),
            ],
            input_mask,
            stride,
        )
    }

    fn compile_stages(
        &self,
        stage_words: &[(vk::ShaderStageFlags, &[u32])],
        input_mask: u16,
        stride: u32,
    ) -> Result<VkProgram, HostError> {
        // SAFETY: the modules are valid SPIR-V (the printer's; checked by spirv-val in the
        // tests) and every create info points at locals that outlive the call.
        unsafe {
            let mut modules = Vec::with_capacity(stage_words.len());
            for (_, words) in stage_words {
                match self
                    .device
                    .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None)
                {
                    Ok(m) => modules.push(m),
                    Err(e) => {
                        for m in modules {
                            self.device.destroy_shader_module(m, None);
                        }
                        return Err(HostError::Compile(format!("vkCreateShaderModule: {e}")));
                    }
                }
            }
            let stages: Vec<vk::PipelineShaderStageCreateInfo> = stage_words
                .iter()
                .zip(&modules)
                .map(|((stage, _), &module)| {
                    vk::PipelineShaderStageCreateInfo::default()
                        .stage(*stage)
                        .module(module)
                        .name(c"main")
                })
                .collect();
            let bindings = [vk::VertexInputBindingDescription::default()
                .binding(0)
                .stride(VERTEX_BYTES)
                .input_rate(vk::VertexInputRate::VERTEX)];
            let attributes: Vec<vk::VertexInputAttributeDescription> = (0..16u32)
                .filter(|n| input_mask & (1 << n) != 0)
                .map(|n| {
                    vk::VertexInputAttributeDescription::default()
                        .location(n)
                        .binding(0)
                        .format(vk::Format::R32G32B32A32_SFLOAT)
                        .offset(16 * n)
                })
                .collect();
            let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
                .vertex_binding_descriptions(&bindings)
                .vertex_attribute_descriptions(&attributes);
            let assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
                .topology(vk::PrimitiveTopology::POINT_LIST);
            let raster = vk::PipelineRasterizationStateCreateInfo::default()
                .rasterizer_discard_enable(true)
                .polygon_mode(vk::PolygonMode::FILL)
                .cull_mode(vk::CullModeFlags::NONE)
                .line_width(1.0);
            let mut rendering = vk::PipelineRenderingCreateInfo::default();
            let info = vk::GraphicsPipelineCreateInfo::default()
                .stages(&stages)
                .vertex_input_state(&vertex_input)
                .input_assembly_state(&assembly)
                .rasterization_state(&raster)
                .layout(self.pipeline_layout)
                .push_next(&mut rendering);
            let pipeline =
                self.device
                    .create_graphics_pipelines(vk::PipelineCache::null(), &[info], None);
            match pipeline {
                Ok(p) => Ok(VkProgram {
                    modules,
                    pipeline: p[0],
                    stride,
                    input_mask,
                }),
                Err((_, e)) => {
                    for m in modules {
                        self.device.destroy_shader_module(m, None);
                    }
                    Err(HostError::Link(format!("vkCreateGraphicsPipelines: {e}")))
                }
            }
        }
    }

    fn buffer(&self, size: usize, usage: vk::BufferUsageFlags) -> Result<HostBuffer, HostError> {
        // SAFETY: a live device; the buffer is bound to memory of a host-visible type.
        unsafe {
            let buffer = self
                .device
                .create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(size.max(16) as u64)
                        .usage(usage)
                        .sharing_mode(vk::SharingMode::EXCLUSIVE),
                    None,
                )
                .map_err(driver("buffer"))?;
            let needs = self.device.get_buffer_memory_requirements(buffer);
            let wanted =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let Some(kind) = (0..self.memory.memory_type_count).find(|&k| {
                needs.memory_type_bits & (1 << k) != 0
                    && self.memory.memory_types[k as usize]
                        .property_flags
                        .contains(wanted)
            }) else {
                self.device.destroy_buffer(buffer, None);
                return Err(HostError::Driver("no host-visible memory".into()));
            };
            let memory = match self.device.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(needs.size)
                    .memory_type_index(kind),
                None,
            ) {
                Ok(m) => m,
                Err(e) => {
                    self.device.destroy_buffer(buffer, None);
                    return Err(driver("memory")(e));
                }
            };
            let made = HostBuffer { buffer, memory };
            if let Err(e) = self.device.bind_buffer_memory(buffer, memory, 0) {
                self.free(made);
                return Err(driver("binding memory")(e));
            }
            Ok(made)
        }
    }

    /// Runs `copy` on `buffer`'s memory, mapped (its start).
    fn mapped(&self, buffer: &HostBuffer, copy: impl FnOnce(*mut u8)) -> Result<(), HostError> {
        // SAFETY: the memory is host-visible and not in use by the device (runs wait for their
        // fence); it stays mapped only during `copy`.
        unsafe {
            let p = self
                .device
                .map_memory(
                    buffer.memory,
                    0,
                    vk::WHOLE_SIZE,
                    vk::MemoryMapFlags::empty(),
                )
                .map_err(driver("mapping"))?;
            copy(p.cast::<u8>());
            self.device.unmap_memory(buffer.memory);
        }
        Ok(())
    }

    /// Copies `bytes` into `buffer`'s memory (at least as long) at its start.
    fn fill(&self, buffer: &HostBuffer, bytes: &[u8]) -> Result<(), HostError> {
        // SAFETY: the buffers are made at least as long as what is copied into them.
        self.mapped(buffer, |p| unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len())
        })
    }

    /// Copies the start of `buffer`'s memory (at least as long) into `out`.
    fn read(&self, buffer: &HostBuffer, out: &mut [u8]) -> Result<(), HostError> {
        // SAFETY: as in `fill`.
        self.mapped(buffer, |p| unsafe {
            std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len())
        })
    }

    fn free(&self, buffer: HostBuffer) {
        // SAFETY: nothing in flight uses the buffer.
        unsafe {
            self.device.destroy_buffer(buffer.buffer, None);
            self.device.free_memory(buffer.memory, None);
        }
    }

    /// Runs `program` once per vertex of `inputs` (256 bytes each) with the uniform `block`;
    /// returns the captured records, `program`'s stride each.
    pub fn run(
        &self,
        program: &VkProgram,
        block: &[u8],
        inputs: &[u8],
    ) -> Result<Vec<u8>, HostError> {
        let vertices = inputs.len() / VERTEX_BYTES as usize;
        let (out, written) = self.draw(program, &[block], inputs, vertices, 1)?;
        super::all_captured(written, vertices)?;
        Ok(out)
    }

    /// Runs a geometry `program` on the points of `inputs` (256 bytes each) with the uniform
    /// `block` and the state block `state`, capturing up to `primitives` primitives of
    /// `capture`: the captured records of those written, `program`'s stride each.
    pub fn run_geometry(
        &self,
        capture: Capture,
        program: &VkProgram,
        block: &[u8],
        state: &[u8],
        inputs: &[u8],
        primitives: usize,
    ) -> Result<Vec<u8>, HostError> {
        let records = capture.vertices();
        let (mut out, written) =
            self.draw(program, &[block, state], inputs, primitives, records)?;
        let written = (written as usize).min(primitives);
        out.truncate(written * records * program.stride as usize);
        Ok(out)
    }

    /// Draws the points of `inputs` with `blocks` bound at bindings 0, 1, ..., capturing up to
    /// `primitives` primitives of `records` records: the captured bytes and how many
    /// primitives the driver wrote.
    fn draw(
        &self,
        program: &VkProgram,
        blocks: &[&[u8]],
        inputs: &[u8],
        primitives: usize,
        records: usize,
    ) -> Result<(Vec<u8>, u64), HostError> {
        let out_len = primitives * records * program.stride as usize;
        let mut out = vec![0u8; out_len];
        if inputs.is_empty() || out_len == 0 {
            return Ok((out, 0));
        }
        let mut buffers = Vec::new();
        let result = self.draw_with(program, blocks, inputs, &mut out, &mut buffers);
        for b in buffers {
            self.free(b);
        }
        result.map(|written| (out, written))
    }

    fn draw_with(
        &self,
        program: &VkProgram,
        blocks: &[&[u8]],
        inputs: &[u8],
        out: &mut [u8],
        buffers: &mut Vec<HostBuffer>,
    ) -> Result<u64, HostError> {
        let vertices = (inputs.len() / VERTEX_BYTES as usize) as u32;
        buffers.push(self.buffer(inputs.len(), vk::BufferUsageFlags::VERTEX_BUFFER)?);
        buffers.push(self.buffer(
            out.len(),
            vk::BufferUsageFlags::TRANSFORM_FEEDBACK_BUFFER_EXT,
        )?);
        self.fill(&buffers[0], inputs)?;
        // A record the driver did not write reads as all ones: a status no run ends with.
        self.fill(&buffers[1], &vec![0xFF; out.len()])?;
        for bytes in blocks {
            let block = self.buffer(bytes.len(), vk::BufferUsageFlags::UNIFORM_BUFFER)?;
            buffers.push(block);
            self.fill(&buffers[buffers.len() - 1], bytes)?;
        }
        let (vertex, capture, uniforms) = (&buffers[0], &buffers[1], &buffers[2..]);
        let d = &self.device;
        // SAFETY: every handle is live; the command buffer, descriptor pool, query pool and
        // fence made here are destroyed before returning, after the fence has signalled (or
        // after the device has gone idle on a timeout).
        unsafe {
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::UNIFORM_BUFFER)
                .descriptor_count(2)];
            let pool = d
                .create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(1)
                        .pool_sizes(&sizes),
                    None,
                )
                .map_err(driver("descriptor pool"))?;
            let queries = match d.create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TRANSFORM_FEEDBACK_STREAM_EXT)
                    .query_count(1),
                None,
            ) {
                Ok(q) => q,
                Err(e) => {
                    d.destroy_descriptor_pool(pool, None);
                    return Err(driver("query pool")(e));
                }
            };
            let fence = match d.create_fence(&vk::FenceCreateInfo::default(), None) {
                Ok(f) => f,
                Err(e) => {
                    d.destroy_query_pool(queries, None);
                    d.destroy_descriptor_pool(pool, None);
                    return Err(driver("fence")(e));
                }
            };
            let mut commands = Vec::new();
            let result = (|| -> Result<u64, HostError> {
                let layouts = [self.set_layout];
                let set = d
                    .allocate_descriptor_sets(
                        &vk::DescriptorSetAllocateInfo::default()
                            .descriptor_pool(pool)
                            .set_layouts(&layouts),
                    )
                    .map_err(driver("descriptor set"))?[0];
                let infos: Vec<[vk::DescriptorBufferInfo; 1]> = uniforms
                    .iter()
                    .zip(blocks)
                    .map(|(buffer, bytes)| {
                        [vk::DescriptorBufferInfo::default()
                            .buffer(buffer.buffer)
                            .offset(0)
                            .range(bytes.len() as u64)]
                    })
                    .collect();
                let writes: Vec<vk::WriteDescriptorSet> = infos
                    .iter()
                    .enumerate()
                    .map(|(binding, info)| {
                        vk::WriteDescriptorSet::default()
                            .dst_set(set)
                            .dst_binding(binding as u32)
                            .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
                            .buffer_info(info)
                    })
                    .collect();
                d.update_descriptor_sets(&writes, &[]);
                commands = d
                    .allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default()
                            .command_pool(self.command_pool)
                            .level(vk::CommandBufferLevel::PRIMARY)
                            .command_buffer_count(1),
                    )
                    .map_err(driver("command buffer"))?;
                let cmd = commands[0];
                d.begin_command_buffer(
                    cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
                .map_err(driver("recording"))?;
                d.cmd_reset_query_pool(cmd, queries, 0, 1);
                let area = vk::Rect2D {
                    offset: vk::Offset2D { x: 0, y: 0 },
                    extent: vk::Extent2D {
                        width: 1,
                        height: 1,
                    },
                };
                d.cmd_begin_rendering(
                    cmd,
                    &vk::RenderingInfo::default()
                        .render_area(area)
                        .layer_count(1),
                );
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, program.pipeline);
                d.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::GRAPHICS,
                    self.pipeline_layout,
                    crate::spv::BLOCK_SET,
                    &[set],
                    &[],
                );
                if program.input_mask != 0 {
                    d.cmd_bind_vertex_buffers(cmd, 0, &[vertex.buffer], &[0]);
                }
                let xfb = self.xfb.fp();
                let capture_size = out.len() as u64;
                (xfb.cmd_bind_transform_feedback_buffers_ext)(
                    cmd,
                    0,
                    1,
                    &capture.buffer,
                    &0,
                    &capture_size,
                );
                d.cmd_begin_query(cmd, queries, 0, vk::QueryControlFlags::empty());
                (xfb.cmd_begin_transform_feedback_ext)(
                    cmd,
                    0,
                    0,
                    std::ptr::null(),
                    std::ptr::null(),
                );
                d.cmd_draw(cmd, vertices, 1, 0, 0);
                (xfb.cmd_end_transform_feedback_ext)(cmd, 0, 0, std::ptr::null(), std::ptr::null());
                d.cmd_end_query(cmd, queries, 0);
                d.cmd_end_rendering(cmd);
                let barrier = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::TRANSFORM_FEEDBACK_WRITE_EXT)
                    .dst_access_mask(vk::AccessFlags::HOST_READ);
                d.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::TRANSFORM_FEEDBACK_EXT,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                );
                d.end_command_buffer(cmd).map_err(driver("recording"))?;
                let submit = [vk::SubmitInfo::default().command_buffers(&commands)];
                d.queue_submit(self.queue, &submit, fence)
                    .map_err(driver("submission"))?;
                if let Err(e) = d.wait_for_fences(&[fence], true, RUN_TIMEOUT.as_nanos() as u64) {
                    let _ = d.device_wait_idle();
                    return Err(driver("waiting for the run")(e));
                }
                // One query's primitives written and primitives needed.
                let mut counts = [[0u64; 2]; 1];
                d.get_query_pool_results(
                    queries,
                    0,
                    &mut counts,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
                .map_err(driver("query"))?;
                Ok(counts[0][0])
            })();
            if !commands.is_empty() {
                d.free_command_buffers(self.command_pool, &commands);
            }
            d.destroy_fence(fence, None);
            d.destroy_query_pool(queries, None);
            d.destroy_descriptor_pool(pool, None);
            let written = result?;
            self.read(capture, out)?;
            Ok(written)
        }
    }

    /// Frees `program`.
    pub fn delete(&self, program: VkProgram) {
        // SAFETY: no run is in flight (runs wait for their fence).
        unsafe {
            self.device.destroy_pipeline(program.pipeline, None);
            for module in program.modules {
                self.device.destroy_shader_module(module, None);
            }
        }
    }
}

impl Drop for VkDevice {
    fn drop(&mut self) {
        // SAFETY: every program was deleted by its engine; nothing is in flight.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device
                .destroy_pipeline_layout(self.pipeline_layout, None);
            self.device
                .destroy_descriptor_set_layout(self.set_layout, None);
            self.device.destroy_command_pool(self.command_pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
