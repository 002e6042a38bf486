"""Catalog values against the data sheets quoted in shared/reference/published.md."""

import dataclasses

import pytest

from course.core import catalog as cat


def test_h100_dense_peak_is_989_not_the_sparse_1979():
    # published.md, Hardware: 989 TFLOPS dense BF16/FP16; 1979 is sparsity or dense FP8.
    h100 = cat.accelerator("H100")
    assert h100.peak("bf16") == pytest.approx(989e12)
    assert h100.peak("fp16") == pytest.approx(989e12)
    assert h100.peak("fp8") == pytest.approx(1979e12)
    assert h100.memory_marketed_gb == 80 and h100.memory_bytes == 81_559 * 2**20  # "80 GB" is 85.5e9 bytes
    # the data sheet's "80 GB" is what NVML reports as 81,559 MiB (85.52e9 bytes): the capacity the planner uses
    assert h100.memory_capacity == 81_559 * 2**20
    assert h100.memory_capacity / 1e9 == pytest.approx(85.52, abs=0.005)
    assert cat.accelerator("A100").memory_capacity == cat.accelerator("A100").memory_bytes  # not known: data sheet
    assert h100.memory_bandwidth == pytest.approx(3.35e12)
    assert h100.tdp_watts == 700


def test_a100_peak_matches_megatron_table1_header():
    assert cat.accelerator("a100").peak("bf16") == pytest.approx(312e12)


def test_infiniband_ports_in_bytes_per_second_per_direction():
    # published.md: HDR 200 Gb/s = 25 GB/s, NDR 50 GB/s, XDR 100 GB/s (not 400 GB/s for HDR).
    assert cat.link("InfiniBand HDR").bandwidth == pytest.approx(25e9)
    assert cat.link("ib-ndr").bandwidth == pytest.approx(50e9)
    assert cat.link("XDR").bandwidth == pytest.approx(100e9)


def test_nvlink4_is_450_per_direction_900_total():
    assert 2 * cat.link("NVLink 4").bandwidth == pytest.approx(900e9)


def test_ethernet_and_edge_links_convert_bits_to_bytes():
    assert cat.link("10gbe").bandwidth == pytest.approx(1.25e9)
    assert cat.link("Ethernet 100G").bandwidth == pytest.approx(12.5e9)
    assert cat.link("400gbe").bandwidth == pytest.approx(50e9)
    assert cat.link("5G").bandwidth == pytest.approx(50e6 / 8)
    assert cat.link("ble").bandwidth == pytest.approx(2e6 / 8)


def test_ndr_is_four_times_100gbe_not_double():
    # Erratum 8: the tutorial says 100GbE -> NDR "roughly doubles" bandwidth.
    ratio = cat.link("ndr").bandwidth / cat.link("100gbe").bandwidth
    assert ratio == pytest.approx(4.0)


def test_every_entry_has_a_source():
    for table in (cat.ACCELERATORS, cat.LINKS, cat.MODELS, cat.NODES, cat.CLUSTERS):
        for entry in table.values():
            assert len(entry.source) > 20, entry.name


@pytest.mark.parametrize("name,layers,hidden,heads,kv,ffn", [
    ("llama3-8b", 32, 4096, 32, 8, 14336),      # Dubey et al. 2024, Table 3
    ("llama3-70b", 80, 8192, 64, 8, 28672),
    ("llama3-405b", 126, 16384, 128, 8, 53248),
    ("gpt3-175b", 96, 12288, 96, 96, 49152),    # Brown et al. 2020, Table 2.1
])
def test_model_shapes(name, layers, hidden, heads, kv, ffn):
    m = cat.model(name)
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn) == (layers, hidden, heads, kv, ffn)


@pytest.mark.parametrize("row", cat.MEGATRON_TABLE1, ids=lambda r: r[0].name)
def test_megatron_shapes_reproduce_their_parameter_count(row):
    # Narayanan et al. 2021, eq. (2): P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)).
    m = row[0]
    l, h, V, s = m.layers, m.hidden, m.vocab, m.seq_len
    params = 12 * l * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))
    # the table rounds to one decimal (1.65B prints as 1.7B), hence 3 %
    assert params == pytest.approx(m.params, rel=0.03)


def test_llama3_shapes_give_their_nominal_size():
    # Independent count: attention (q, o full; k, v at kv/heads), SwiGLU MLP (3 matrices),
    # input and output embeddings. Nominal sizes are rounded, so 3 % tolerance.
    for name in ("llama3-8b", "llama3-70b", "llama3-405b"):
        m = cat.model(name)
        d, kv = m.hidden, m.kv_heads * m.head_dim
        per_layer = 2 * d * d + 2 * d * kv + 3 * d * m.ffn
        total = m.layers * per_layer + 2 * m.vocab * d
        assert total == pytest.approx(m.params, rel=0.03), name


def test_clusters():
    assert cat.cluster("research-256").gpus == 256
    assert cat.cluster("h100-1024").gpus == 1024
    assert cat.cluster("h100-16384").gpus == 16384
    # one NDR port per GPU on a DGX H100 -> 50 GB/s per GPU across nodes
    assert cat.cluster("h100-1024").inter_bandwidth == pytest.approx(50e9)
    assert cat.cluster("research-256").inter_bandwidth == pytest.approx(12.5e9)
    assert cat.make_cluster("DGX A100", 1536).nodes == 192
    assert cat.with_fabric(cat.cluster("h100-1024"), "hdr").inter_bandwidth == pytest.approx(25e9)


def test_tracks_cover_the_four_contexts_of_the_lab_plan():
    assert set(cat.TRACKS) == {"Cloud", "Edge", "Mobile", "Tiny"}
    assert cat.track("edge").link.name == "5G"
    assert cat.track("tiny").link.name == "Bluetooth LE"
    assert cat.track("cloud").accelerator is cat.accelerator("H100")


@pytest.mark.parametrize("lookup", [cat.accelerator, cat.link, cat.model, cat.node,
                                    cat.cluster, cat.track])
def test_unknown_names_raise_valueerror_listing_known_names(lookup):
    with pytest.raises(ValueError, match="must be one of"):
        lookup("no-such-thing")
    with pytest.raises(ValueError):
        lookup(42)


def test_bad_precision_and_bad_cluster_size():
    with pytest.raises(ValueError, match="precision"):
        cat.accelerator("A100").peak("fp8")
    with pytest.raises(ValueError, match="gpus"):
        cat.make_cluster("DGX H100", 100)


def test_entries_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        cat.accelerator("H100").tdp_watts = 1
    with pytest.raises(TypeError):
        cat.accelerator("H100").peak_flops["bf16"] = 1979e12


def test_every_price_names_its_source_and_the_h100_price_is_marked_as_an_assumption():
    from course.core import catalog

    for acc in catalog.ACCELERATORS.values():
        if acc.price_per_hour is not None:
            assert acc.price_source, acc.name
    h100 = catalog.accelerator("H100")
    # $98.32 per p5.48xlarge instance-hour (8 GPUs), as cited in price_source
    assert h100.price_per_hour == pytest.approx(98.32 / 8)
    assert h100.price_source.startswith("ASSUMPTION") and "98.32" in h100.price_source


def test_qwen3_235b_a22b_activates_22b_of_235b():
    # Qwen3 Technical Report, Table 2 / model card: 235B total, 22B activated (8 of 128 experts per token)
    m = cat.model("qwen3-235b-a22b")
    assert m.params == pytest.approx(235e9)
    assert m.active_params == pytest.approx(22e9, rel=0.02)
    # the routed experts are 94 layers x 128 experts x 3 matrices of 4096 x 1536
    assert m.routed_expert_params == 94 * 128 * 3 * 4096 * 1536
