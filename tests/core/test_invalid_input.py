"""Invalid input raises ValueError naming the parameter, for every numeric parameter.

Each public function is called once with valid arguments (``VALID``); then each numeric
argument in turn is replaced by NaN, which no parameter accepts, and the error message
must name that parameter. Catalog lookups and the planner take names and objects and
have their own tests.
"""

import math

import pytest

from course import core

NAN = math.nan

VALID = {
    "algorithm_bandwidth": dict(message_bytes=1e9, seconds=0.1),
    "all_gather_time": dict(message_bytes=1e9, n=8, bandwidth=50e9, latency=5e-6),
    "allreduce_coefficients": dict(n=8),
    "allreduce_lower_bound": dict(message_bytes=1e9, n=8, bandwidth=50e9, latency=5e-6),
    "allreduce_time": dict(message_bytes=1e9, n=8, bandwidth=50e9, latency=5e-6),
    "allreduce_traffic_bytes": dict(message_bytes=1e9, n=8),
    "bus_bandwidth": dict(message_bytes=1e9, n=8, seconds=0.1),
    "crossover_message_bytes": dict(n=8, bandwidth=50e9, latency=5e-6, algorithm_a="ring",
                                    algorithm_b="tree"),
    "hierarchical_allreduce_time": dict(message_bytes=1e9, gpus_per_node=8, nodes=4, intra_bandwidth=450e9,
                                        inter_bandwidth=50e9, intra_latency=1e-6, inter_latency=5e-6),
    "point_to_point_time": dict(message_bytes=1e9, bandwidth=50e9, latency=5e-6),
    "reduce_scatter_time": dict(message_bytes=1e9, n=8, bandwidth=50e9, latency=5e-6),
    "ring_allreduce_schedule": dict(n=4),
    "accumulation_step_time": dict(micro_batch_seconds=0.1, accum_steps=8, allreduce_seconds=0.05,
                                   optimizer_seconds=0.01),
    "allreduce_time_saved": dict(allreduce_seconds=0.05, accum_steps=8),
    "bucket_count": dict(gradient_bytes=2e10, bucket_bytes=25e6),
    "comm_compute_ratio": dict(comm_seconds=0.3, compute_seconds=0.2),
    "compute_time": dict(flops=1e15, flops_per_second=5e14),
    "data_parallel_degree": dict(gpus=64, tp=8, pp=2),
    "data_parallel_speedup": dict(n=8, compute_seconds=0.2, comm_seconds=0.05, overlap=0.5),
    "data_parallel_step_time": dict(compute_seconds=0.2, comm_seconds=0.05, overlap=0.5),
    "diminishing_returns_gpus": dict(gpus=[1, 2, 4], speedups=[1.0, 1.8, 2.5], threshold=0.5),
    "effective_batch": dict(micro_batch=4, accum_steps=8, dp=16),
    "exposed_comm_time": dict(backward_seconds=0.2, comm_seconds=0.06, buckets=40),
    "marginal_speedup": dict(gpus=[1, 2, 4], speedups=[1.0, 1.8, 2.5]),
    "mfu": dict(model_flops=1e15, seconds=2.0, peak_flops_per_second=989e12, n_gpus=1),
    "overlap_fraction": dict(backward_seconds=0.2, comm_seconds=0.06, buckets=40),
    "required_accum_steps": dict(target_batch=2048, micro_batch=4, dp=8),
    "samples_per_second": dict(samples=2048, seconds=7.7),
    "scaling_efficiency": dict(throughput_n=6000.0, throughput_one=100.0, n=64),
    "speedup": dict(throughput_n=6000.0, throughput_one=100.0),
    "energy_cost": dict(kwh=1e6, price_per_kwh=0.05),
    "energy_kwh": dict(n_gpus=1024, watts_per_gpu=700.0, seconds=86400.0, pue=1.2),
    "gpu_cost": dict(n_gpus=1024, seconds=86400.0, price_per_gpu_hour=2.0),
    "gpu_hours": dict(n_gpus=1024, seconds=86400.0),
    "pf_days": dict(flops=1e23),
    "training_days": dict(flops=1e23, n_gpus=1024, peak_flops_per_second=989e12, mfu=0.4),
    "training_flops": dict(params=7e10, tokens=1e12),
    "training_seconds": dict(flops=1e23, n_gpus=1024, peak_flops_per_second=989e12, mfu=0.4),
    "linear_scaled_lr": dict(base_lr=3e-4, base_batch=256, new_batch=2048),
    "sqrt_scaled_lr": dict(base_lr=3e-4, base_batch=256, new_batch=2048),
    "warmup_cosine_lr": dict(step=10, peak_lr=3e-4, warmup_steps=100, total_steps=1000, min_lr=1e-5),
    "warmup_lr": dict(step=10, peak_lr=3e-4, warmup_steps=100, start_lr=0.0),
    "warmup_steps_heuristic": dict(base_batch=256, new_batch=2048, steps_per_unit_scale=1000),
    "activation_bytes_per_gpu": dict(seq=2048, micro_batch=1, hidden=4096, heads=32, layers=32, tp=2, pp=4,
                                     in_flight=4),
    "activation_bytes_per_layer": dict(seq=2048, micro_batch=1, hidden=4096, heads=32, tp=2),
    "gpu_memory_breakdown": dict(params=7e9, layers=32, seq=2048, micro_batch=1, hidden=4096, heads=32,
                                 tp=2, pp=4, dp=8, zero_stage=1, in_flight=4),
    "model_state_breakdown": dict(params=7e9, zero_stage=1, dp=8, weight_bytes=2.0, grad_bytes=2.0,
                                  optimizer_bytes=12.0),
    "model_state_bytes": dict(params=7e9, zero_stage=1, dp=8, weight_bytes=2.0, grad_bytes=2.0,
                              optimizer_bytes=12.0),
    "workbook_activation_bytes": dict(micro_batch=4, seq=4096, hidden=8192, layers=80),
    "workbook_activation_elements_per_layer": dict(micro_batch=4, seq=4096, hidden=8192),
    "zero_bytes_per_param": dict(zero_stage=1, dp=8, weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0),
    "bubble_fraction": dict(p=4, m=8, v=2),
    "bubble_overhead": dict(p=4, m=8, v=2),
    "in_flight_microbatches": dict(p=4, m=8, v=2),
    "layers_per_stage": dict(layers=10, pp=4),
    "max_layers_per_stage": dict(layers=10, pp=4),
    "min_microbatches_for_bubble": dict(p=8, target=0.05, v=2),
    "p2p_bytes_per_microbatch": dict(seq=2048, micro_batch=1, hidden=4096, bytes_per_element=2.0, v=2),
    "p2p_bytes_per_step": dict(activation_bytes=5e8, p=4, m=8, v=2),
    "pipeline_schedule": dict(p=2, m=2, t_forward=1.0, t_backward=2.0),
    "pipeline_step_time": dict(p=4, m=8, t_forward=1.0, t_backward=2.0, v=2),
    "stages_with_max_layers": dict(layers=10, pp=4),
    "below_normal_range": dict(values=1e-5, fmt="fp16"),
    "dynamic_loss_scale": dict(overflows=[False, True], init_scale=2.0**16, growth_factor=2.0,
                               backoff_factor=0.5, growth_interval=2000),
    "flushes_to_zero": dict(values=1e-8, fmt="fp16"),
    "loss_scale_history": dict(overflows=[False, True], init_scale=2.0**16, growth_factor=2.0,
                               backoff_factor=0.5, growth_interval=2000),
    "loss_scale_to_lift": dict(magnitude=1e-7),
    "max_safe_loss_scale": dict(max_magnitude=10.0),
    "overflows": dict(values=7e4, fmt="fp16"),
    "checkpoint_bytes": dict(params=7e10, weight_bytes=2, master_bytes=4, optimizer_bytes=8, extra_bytes=0.0),
    "checkpoint_write_time": dict(checkpoint_bytes=1e12, bandwidth=1e10, writers=2),
    "cluster_mtbf": dict(component_mtbf_seconds=1.8e8, components=16384),
    "daly_interval": dict(checkpoint_seconds=98.0, mtbf_seconds=86400.0),
    "expected_lost_seconds": dict(interval_seconds=4000.0, restart_seconds=120.0),
    "failures_during": dict(run_seconds=1e6, mtbf_seconds=86400.0),
    "waste_cost_per_failure": dict(gpus=512, interval_seconds=4000.0, price_per_gpu_hour=2.0,
                                   restart_seconds=120.0),
    "waste_cost_per_hour": dict(gpus=512, interval_seconds=4000.0, checkpoint_seconds=98.0,
                                mtbf_seconds=86400.0, price_per_gpu_hour=2.0, restart_seconds=120.0),
    "waste_fraction": dict(interval_seconds=4000.0, checkpoint_seconds=98.0, mtbf_seconds=86400.0,
                           restart_seconds=120.0),
    "waste_gpu_hours_per_failure": dict(gpus=512, interval_seconds=4000.0, restart_seconds=120.0),
    "waste_gpu_hours_per_hour": dict(gpus=512, interval_seconds=4000.0, checkpoint_seconds=98.0,
                                     mtbf_seconds=86400.0, restart_seconds=120.0),
    "young_interval": dict(checkpoint_seconds=98.0, mtbf_seconds=86400.0),
    "async_speedup": dict(n_workers=64, straggler_fraction=0.05, slowdown=3.0),
    "async_throughput": dict(samples_per_worker=32, step_seconds=1.0, n_workers=64, straggler_fraction=0.05,
                             slowdown=3.0),
    "async_worker_step_time": dict(step_seconds=1.0, straggler_fraction=0.05, slowdown=3.0),
    "mean_staleness": dict(n_workers=64),
    "straggler_staleness": dict(n_workers=64, straggler_fraction=0.05, slowdown=3.0),
    "sync_idle_fraction": dict(n_workers=64, straggler_fraction=0.05, slowdown=3.0),
    "sync_step_time": dict(step_seconds=1.0, n_workers=64, straggler_fraction=0.05, slowdown=3.0),
    "sync_throughput": dict(samples_per_worker=32, step_seconds=1.0, n_workers=64, straggler_fraction=0.05,
                            slowdown=3.0),
    "column_parallel_shard_shape": dict(in_features=8192, out_features=8192, tp=8),
    "heads_per_gpu": dict(heads=64, tp=8),
    "kv_heads_per_gpu": dict(kv_heads=8, tp=8),
    "row_parallel_shard_shape": dict(in_features=8192, out_features=8192, tp=8),
    "tp_allreduce_bytes": dict(seq=4096, micro_batch=1, hidden=8192, bytes_per_element=2.0),
    "tp_allreduce_traffic_per_gpu": dict(seq=4096, micro_batch=1, hidden=8192, tp=8, bytes_per_element=2.0),
    "tp_comm_overhead": dict(seq=4096, micro_batch=1, hidden=8192, layers=80, tp=8, bandwidth=600e9,
                             compute_seconds=0.3, latency=1e-6, bytes_per_element=2.0),
    "tp_comm_time_per_layer": dict(seq=4096, micro_batch=1, hidden=8192, tp=8, bandwidth=600e9, latency=1e-6,
                                   bytes_per_element=2.0),
    "tp_weight_bytes_per_gpu": dict(params_per_layer=8e8, layers=80, tp=8, bytes_per_param=2.0),
    "transformer_layer_params": dict(hidden=8192, ffn_hidden=28672, heads=64, kv_heads=8),
}

CASES = [(name, arg) for name, kwargs in VALID.items() for arg, value in kwargs.items()
         if isinstance(value, (int, float, list)) and not isinstance(value, bool)]


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_arguments_are_valid(name):
    getattr(core, name)(**VALID[name])


@pytest.mark.parametrize("name, arg", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_nan_raises_value_error_naming_the_parameter(name, arg):
    kwargs = dict(VALID[name], **{arg: NAN})
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        getattr(core, name)(**kwargs)


NAME_CASES = [
    ("allreduce_time", dict(VALID["allreduce_time"]), "algorithm"),
    ("allreduce_coefficients", dict(n=8), "algorithm"),
    ("allreduce_traffic_bytes", dict(VALID["allreduce_traffic_bytes"]), "algorithm"),
    ("crossover_message_bytes", dict(VALID["crossover_message_bytes"]), "algorithm_a"),
    ("crossover_message_bytes", dict(VALID["crossover_message_bytes"]), "algorithm_b"),
    ("param_bytes_breakdown", {}, "weights"),
    ("param_bytes_breakdown", {}, "optimizer"),
    ("param_bytes_breakdown", {}, "grads"),
    ("param_bytes_breakdown", {}, "master"),
    ("bytes_per_param", {}, "weights"),
    ("precision_bytes", {}, "name"),
    ("workbook_activation_bytes", dict(VALID["workbook_activation_bytes"]), "precision"),
    ("activation_bytes_per_layer", dict(VALID["activation_bytes_per_layer"]), "recompute"),
    ("in_flight_microbatches", dict(VALID["in_flight_microbatches"]), "schedule"),
    ("min_microbatches_for_bubble", dict(VALID["min_microbatches_for_bubble"]), "measure"),
    ("pipeline_schedule", dict(VALID["pipeline_schedule"]), "schedule"),
    ("float_format", {}, "name"),
    ("bytes_per_element", {}, "fmt"),
    ("flushes_to_zero", dict(VALID["flushes_to_zero"]), "fmt"),
    ("overflows", dict(VALID["overflows"]), "fmt"),
    ("loss_scale_to_lift", dict(VALID["loss_scale_to_lift"]), "fmt"),
    ("tp_allreduces_per_layer", {}, "recompute"),
    ("tp_comm_time_per_layer", dict(VALID["tp_comm_time_per_layer"]), "algorithm"),
]


@pytest.mark.parametrize("name, kwargs, arg", NAME_CASES, ids=[f"{n}-{a}" for n, _, a in NAME_CASES])
def test_unknown_name_raises_value_error_naming_the_parameter(name, kwargs, arg):
    with pytest.raises(ValueError, match=rf"^{arg} must be one of"):
        getattr(core, name)(**dict(kwargs, **{arg: "no-such-name"}))
