//! The `gpu-render` example plugin: an MCP server in front of a CUDA path
//! tracer (`cuda-render-mcp`), offered only where an NVIDIA GPU is present
//! (`requires.gpu: nvidia`, docs/declarations.md §5). It declares no
//! application, so availability depends on the GPU alone.

use wasmgate_sdk::{GpuVendor, Manifest, Plugin, Requires, Server, Stdio};

struct GpuRender;

impl Plugin for GpuRender {
    fn manifest() -> Manifest {
        Manifest::new("gpu-render", env!("CARGO_PKG_VERSION"))
            .server(
                Server::new(
                    "gpu-render",
                    Stdio::new("cuda-render-mcp")
                        .args(["--device", "0"])
                        .env_passthrough("CUDA_VISIBLE_DEVICES"),
                )
                // Renders are long: allow ten minutes per tool call.
                .timeout_seconds(600)
                .requires(Requires::gpu(GpuVendor::Nvidia)),
            )
            .skill(wasmgate_sdk::skill!(
                "gpu-render",
                "../skills/gpu-render/SKILL.md"
            ))
    }
}

wasmgate_sdk::export_plugin!(GpuRender);
