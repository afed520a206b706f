//! Distributed training: process-group backends, DDP arguments, rank-divergent materialisation (TPU7xx).

mod ddp_device_ids_on_tpu;
mod mark_sharding_without_spmd;
mod nccl_backend_on_tpu;
mod xla_process_group_on_torchtpu;
mod xmp_spawn_options;

use crate::registry::RuleMeta;

/// The rules of this family, one line each.
pub const RULES: &[&RuleMeta] = &[
    &nccl_backend_on_tpu::NCCL_BACKEND_ON_TPU,
    &ddp_device_ids_on_tpu::DDP_DEVICE_IDS_ON_TPU,
    &mark_sharding_without_spmd::MARK_SHARDING_WITHOUT_SPMD,
    &xmp_spawn_options::XMP_SPAWN_NPROCS,
    &xla_process_group_on_torchtpu::XLA_PROCESS_GROUP_ON_TORCHTPU,
];
