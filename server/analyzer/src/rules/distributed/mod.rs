//! Distributed training: process-group backends, DDP arguments, rank-divergent materialisation (TPU7xx).

mod ddp_device_ids_on_tpu;
mod mark_sharding_without_spmd;
mod nccl_backend_on_tpu;
mod spmd_enabled_after_device_use;
mod spmd_mesh_mismatch;
mod step_around_optimizer_step;
mod xla_process_group_on_torchtpu;
mod xmp_spawn_options;

pub(crate) use spmd_enabled_after_device_use::first_device_use;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &nccl_backend_on_tpu::NCCL_BACKEND_ON_TPU,
    &ddp_device_ids_on_tpu::DDP_DEVICE_IDS_ON_TPU,
    &mark_sharding_without_spmd::MARK_SHARDING_WITHOUT_SPMD,
    &xmp_spawn_options::XMP_SPAWN_NPROCS,
    &xla_process_group_on_torchtpu::XLA_PROCESS_GROUP_ON_TORCHTPU,
    &step_around_optimizer_step::STEP_AROUND_OPTIMIZER_STEP,
    &spmd_enabled_after_device_use::SPMD_ENABLED_AFTER_DEVICE_USE,
    &spmd_mesh_mismatch::SPMD_MESH_MISMATCH,
];
