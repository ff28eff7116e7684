"""The memory plan from GGUF headers, checked against llama.cpp's own buffer report on three architectures."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from inference.budget import (  # noqa: E402
    MIB,
    OffloadTarget,
    embedder_footprint,
    kv_bytes_per_layer,
    model_shape,
    plan_memory,
)
from inference.errors import ModelError, UsageError  # noqa: E402
from inference.ggufinfo import ArrayLength, read_gguf_info, row_size, type_id  # noqa: E402
from inference.offload import capture_llama_log, compare, parse_load_log  # noqa: E402
from tests.fixtures.ggufs import write_model  # noqa: E402

X86 = ("Q4_0", "Q4_K", "IQ4_NL", "MXFP4")  # what llama.cpp's CPU backend repacks on x86 with AVX2


def load_report(path: Path, **params):
    """Load a GGUF with llama.cpp (2 threads) and return what it reported allocating."""
    with capture_llama_log() as lines:
        llm = llama_cpp.Llama(model_path=str(path), n_threads=2, verbose=False, **params)
    llm.close()
    del llm
    gc.collect()
    return parse_load_log(lines)


def within(planned: int, actual: int, rel: float) -> bool:
    # llama.cpp prints MiB with two decimals: allow that rounding (5 KiB) on top of `rel`.
    return abs(planned - actual) <= rel * actual + 6 * 1024


# --- the header reader --------------------------------------------------------------------------


def test_header_matches_the_gguf_package_reader(tmp_path):
    import gguf

    path = write_model(tmp_path / "g.gguf", "gemma3", n_layer=3, head_dim=32, weight_type="q8_0")
    info = read_gguf_info(path)
    ref = gguf.GGUFReader(str(path))
    assert info.data_offset == ref.data_offset
    assert [t.name for t in info.tensors] == [t.name for t in ref.tensors]
    for mine, theirs in zip(info.tensors, ref.tensors):
        assert mine.shape == tuple(int(d) for d in theirs.shape)
        assert mine.type_name == theirs.tensor_type.name
        assert mine.n_bytes == int(theirs.n_bytes)
        assert mine.offset == int(theirs.data_offset)
    assert info.architecture == "gemma3"
    assert info.get("attention.sliding_window") == 128
    assert info.get("attention.key_length") == 32
    assert info.metadata["tokenizer.ggml.tokens"][:3] == ["<unk>", "<s>", "</s>"]


def test_long_arrays_are_kept_as_their_length(tmp_path):
    path = write_model(tmp_path / "v.gguf", "llama", pad_vocab_to=8192)
    tokens = read_gguf_info(path).metadata["tokenizer.ggml.tokens"]
    assert tokens == ArrayLength(8192)


def test_broken_files_raise_model_errors(tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"NOPE" + b"\0" * 64)
    with pytest.raises(ModelError, match="not a GGUF"):
        read_gguf_info(junk)
    good = write_model(tmp_path / "ok.gguf", "llama")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(good.read_bytes()[:2000])
    with pytest.raises(ModelError, match="damaged or cut short") as info:
        read_gguf_info(cut)
    assert info.value.hint


def test_type_sizes_follow_ggml():
    assert row_size(type_id("f16"), 128) == 256
    assert row_size(type_id("q8_0"), 128) == 4 * 34
    assert row_size(type_id("Q4_K"), 512) == 2 * 144


# --- model shapes of three architectures ------------------------------------------------------


def test_shapes_of_llama_qwen2_gemma3(tmp_path):
    llama = model_shape(read_gguf_info(write_model(tmp_path / "l.gguf", "llama", n_layer=3)))
    assert (llama.arch, llama.n_layer, llama.n_embd, llama.n_vocab, llama.n_ff) == ("llama", 3, 64, 273, 128)
    assert llama.n_head == (4, 4, 4) and llama.n_head_kv == (2, 2, 2) and llama.head_dim_k == (16, 16, 16)
    assert not llama.tied_output and not any(llama.is_swa) and llama.n_layers == 4
    assert [len(ts) for ts in llama.layer_tensors] == [9, 9, 9]

    qwen = model_shape(read_gguf_info(write_model(tmp_path / "q.gguf", "qwen2", n_layer=2)))
    assert qwen.tied_output and [len(ts) for ts in qwen.layer_tensors] == [12, 12]
    assert [t.name for t in qwen.output_tensors] == ["output_norm.weight"]

    gemma = model_shape(read_gguf_info(write_model(tmp_path / "g.gguf", "gemma3", n_layer=12, head_dim=32)))
    assert gemma.is_swa == (True,) * 5 + (False,) + (True,) * 5 + (False,)  # llama.cpp's pattern of 6
    assert gemma.head_dim_k == (32,) * 12 and gemma.n_swa == 128 and gemma.tied_output


def test_a_file_without_hyperparameters_is_a_usage_error(tmp_path):
    import gguf

    w = gguf.GGUFWriter(str(tmp_path / "proj.gguf"), "clip")
    w.add_tensor("v.weight", __import__("numpy").zeros(4, dtype="float32"))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(UsageError, match="block_count"):
        plan_memory(tmp_path / "proj.gguf")


# --- plan against llama.cpp -------------------------------------------------------------------


CASES = [
    # (arch, model params, context params)
    ("llama", dict(n_embd=256, n_ff=512, weight_type="q4_0"), dict(n_ctx=1000)),
    ("llama", dict(n_embd=256, n_ff=512, weight_type="iq4_nl", tied=True), dict(n_ctx=2048)),
    ("qwen2", dict(n_embd=256, n_ff=512, weight_type="q4_k"), dict(n_ctx=2048)),
    ("qwen2", dict(n_embd=128, n_ff=1024, weight_type="f16", pad_vocab_to=4096), dict(n_ctx=512)),
    ("gemma3", dict(n_embd=256, n_ff=512, n_layer=6, head_dim=64, weight_type="f16"), dict(n_ctx=2048)),
    ("gemma3", dict(n_embd=256, n_ff=512, n_layer=12, head_dim=64, weight_type="q8_0"),
     dict(n_ctx=2048, swa_full=False)),
]


@pytest.mark.parametrize("arch,model,ctx", CASES, ids=[f"{c[0]}-{c[1]['weight_type']}" + ("-swa" if "swa_full" in c[2] else "")
                                                       for c in CASES])
def test_plan_matches_llama_cpp(tmp_path, arch, model, ctx):
    path = write_model(tmp_path / f"{arch}.gguf", arch, **model)
    report = load_report(path, **ctx)
    plan = plan_memory(path, n_ctx=ctx["n_ctx"], swa_full=ctx.get("swa_full", True), repack_types=X86)
    assert report.n_gpu_layers == plan.n_gpu_layers == 0
    assert within(plan.weights, report.total("model"), 0.002)
    assert within(plan.weights_cpu_repack, report.repacked, 0.002)
    assert within(plan.kv_cache, report.total("KV"), 0.0)
    assert within(plan.compute, report.total("compute"), 0.01)
    expected_cells = (plan.kv_cells, plan.kv_cells_swa) if plan.kv_cells_swa and any(
        not s for s in model_shape(read_gguf_info(path)).is_swa) else None
    if expected_cells:
        assert report.kv_cells == expected_cells
    rows = {c.component: c for c in compare(plan, report)}
    assert rows["total"].why is None and abs(rows["total"].error) < 0.01


def test_sliding_window_cache_with_and_without_swa_full(tmp_path):
    path = write_model(tmp_path / "g.gguf", "gemma3", n_embd=256, n_ff=512, n_layer=6, head_dim=64)
    shape = model_shape(read_gguf_info(path))
    full = plan_memory(path, n_ctx=4096, swa_full=True)
    small = plan_memory(path, n_ctx=4096, swa_full=False)
    assert (full.kv_cells, full.kv_cells_swa) == (4096, 4096)
    assert (small.kv_cells, small.kv_cells_swa) == (4096, 768)  # pad256(min(4096, 128 + 512))
    per_cell = kv_bytes_per_layer(shape, 0, 1)
    assert full.kv_cache == 6 * 4096 * per_cell
    assert small.kv_cache == (5 * 768 + 4096) * per_cell
    report = load_report(path, n_ctx=4096, swa_full=False)
    assert report.kv_cells == (4096, 768)
    assert within(small.kv_cache, report.total("KV"), 0.0)


def test_context_is_rounded_and_checked(tmp_path):
    path = write_model(tmp_path / "l.gguf", "llama", n_ctx_train=2048)
    assert plan_memory(path, n_ctx=1000).kv_cells == 1024
    assert plan_memory(path, n_ctx=0).kv_cells == 2048  # 0: the model's own context
    long = plan_memory(path, n_ctx=8192)
    assert any("longer than the 2048" in w for w in long.warnings)
    with pytest.raises(UsageError):
        plan_memory(path, n_ctx=-1)
    with pytest.raises(UsageError, match="KV cache type"):
        plan_memory(path, type_k="q3_x")


def test_quantized_kv_cache(tmp_path):
    path = write_model(tmp_path / "l.gguf", "llama", n_embd=256, n_head=4, n_head_kv=2)
    f16 = plan_memory(path, n_ctx=1024)
    q8 = plan_memory(path, n_ctx=1024, type_k="q8_0", type_v="q8_0", flash_attn=True)
    assert q8.kv_cache == 2 * 1024 * 2 * row_size(type_id("q8_0"), 128)
    assert q8.kv_cache * 32 == f16.kv_cache * 17  # 34 bytes per 32 values against 64
    assert not q8.warnings
    assert any("flash attention" in w for w in plan_memory(path, type_v="q4_0").warnings)
    report = load_report(path, n_ctx=1024, flash_attn=True, type_k=llama_cpp.GGML_TYPE_Q8_0,
                         type_v=llama_cpp.GGML_TYPE_Q8_0)
    assert within(q8.kv_cache, report.total("KV"), 0.0)


# --- the CPU repack rule ------------------------------------------------------------------------


def test_repack_covers_matrix_weights_with_rows_in_eights(tmp_path):
    path = write_model(tmp_path / "q.gguf", "llama", n_embd=256, n_ff=512, weight_type="q4_0")
    shape = model_shape(read_gguf_info(path))
    matrices = sum(t.n_bytes for ts in shape.layer_tensors for t in ts if len(t.shape) == 2)
    plan = plan_memory(path, repack_types=X86)
    assert plan.weights_cpu_repack == matrices  # output.weight has 273 rows (not a multiple of 8): not repacked
    assert plan_memory(path, repack_types=()).weights_cpu_repack == 0
    # A Q8_0 model is not repacked on x86.
    q8 = write_model(tmp_path / "q8.gguf", "llama", n_embd=256, n_ff=512, weight_type="q8_0")
    assert plan_memory(q8, repack_types=X86).weights_cpu_repack == 0


def test_tied_output_is_repacked_from_the_embeddings(tmp_path):
    path = write_model(tmp_path / "t.gguf", "llama", n_embd=256, n_ff=512, weight_type="q4_0", tied=True,
                       pad_vocab_to=512)
    shape = model_shape(read_gguf_info(path))
    embd = next(t for t in shape.input_tensors if t.name == "token_embd.weight")
    matrices = sum(t.n_bytes for ts in shape.layer_tensors for t in ts if len(t.shape) == 2)
    plan = plan_memory(path, repack_types=X86)
    assert plan.weights_cpu_repack == matrices + embd.n_bytes
    report = load_report(path, n_ctx=512)
    assert within(plan.weights_cpu_repack, report.repacked, 0.002)


# --- choosing n_gpu_layers ------------------------------------------------------------------------


def test_offload_takes_the_most_layers_that_fit(tmp_path):
    path = write_model(tmp_path / "m.gguf", "llama", n_embd=256, n_ff=1024, n_layer=8, weight_type="f16")
    needs = [plan_memory(path, n_gpu_layers=k, target=OffloadTarget("GPU0", 1 << 40, 1 << 40), margin=0).gpu_need
             for k in range(10)]
    assert needs[0] == 0 and all(a < b for a, b in zip(needs[1:], needs[2:]))
    margin = 64 * MIB
    for k in (1, 4, 9):
        target = OffloadTarget("GPU0", free=needs[k] + margin, total=8 << 30)
        plan = plan_memory(path, target=target, margin=margin)
        assert plan.n_gpu_layers == k and plan.fits and plan.max_gpu_layers == k
        assert plan.gpu_need + plan.margin <= target.free
        assert plan.device == ("GPU0" if k == 9 else "GPU0 + cpu")
    tight = plan_memory(path, target=OffloadTarget("GPU0", free=needs[4] + margin - 1, total=8 << 30), margin=margin)
    assert tight.n_gpu_layers == 3


def test_an_embedder_on_the_gpu_takes_its_share(tmp_path):
    path = write_model(tmp_path / "m.gguf", "llama", n_embd=256, n_ff=1024, n_layer=8, weight_type="f16")
    everything = plan_memory(path, n_gpu_layers=9, target=OffloadTarget("GPU0", 1 << 40, 1 << 40), margin=0)
    target = OffloadTarget("GPU0", free=everything.gpu_need, total=1 << 30)
    assert plan_memory(path, target=target, margin=0, embedder=embedder_footprint()).n_gpu_layers == 9
    on_gpu = plan_memory(path, target=target, margin=0, embedder=embedder_footprint(device="gpu"))
    assert on_gpu.n_gpu_layers < 9 and on_gpu.to_json()["gpu"]["embedder"] == embedder_footprint().total
    assert on_gpu.ram_need < plan_memory(path, embedder=embedder_footprint()).ram_need


def test_full_offload_moves_weights_kv_and_compute_to_the_gpu(tmp_path):
    path = write_model(tmp_path / "m.gguf", "qwen2", n_embd=256, n_ff=512, n_layer=4, weight_type="q4_0")
    shape = model_shape(read_gguf_info(path))
    cpu = plan_memory(path, n_ctx=2048, repack_types=X86)
    gpu = plan_memory(path, n_ctx=2048, target=OffloadTarget("GPU0", 8 << 30, 8 << 30), repack_types=X86)
    assert gpu.n_gpu_layers == gpu.n_layers == 5
    assert (gpu.kv_cpu, gpu.kv_gpu) == (0, cpu.kv_cache)
    assert gpu.weights_cpu_repack == 0
    embd = next(t for t in shape.input_tensors if t.name == "token_embd.weight")
    assert gpu.weights_cpu_mapped == embd.n_bytes  # the input layer always stays on the CPU

    def hip_alloc(t):  # HIP/CUDA pad a quantized tensor by the rest of a 512-value row, then align to 128
        extra = row_size(t.type_id, 512 - t.shape[0] % 512) if t.type_name == "Q4_0" and t.shape[0] % 512 else 0
        return -(-(t.n_bytes + extra) // 128) * 128

    on_gpu = [t for ts in shape.layer_tensors for t in ts] + list(shape.output_tensors) + [embd]  # tied: a copy
    assert gpu.weights_gpu == sum(hip_alloc(t) for t in on_gpu)
    assert gpu.weights_gpu > sum(t.n_bytes for t in on_gpu)
    assert gpu.compute_gpu >= cpu.compute and gpu.compute_cpu < gpu.compute_gpu


def test_explicit_layers_that_do_not_fit_warn(tmp_path):
    path = write_model(tmp_path / "m.gguf", "llama", n_embd=256, n_ff=1024, n_layer=8, weight_type="f16")
    small = OffloadTarget("GPU0 Tiny", free=4 * MIB, total=8 * MIB)
    plan = plan_memory(path, target=small, n_gpu_layers=-1, margin=0)
    assert plan.n_gpu_layers == 9 and not plan.fits
    assert any("n_gpu_layers=9 needs" in w and "MiB on GPU0 Tiny but only 4.00 MiB is free (keeping 0.00 MiB spare)"
               in w for w in plan.warnings)  # the one byte format: format_bytes
    none = plan_memory(path, n_gpu_layers=5)
    assert none.n_gpu_layers == 0 and any("no GPU was found" in w for w in none.warnings)
    unusable = OffloadTarget("GPU0", free=8 << 30, total=8 << 30, usable=False)
    cpu_build = plan_memory(path, target=unusable)
    assert cpu_build.n_gpu_layers == 0 and cpu_build.max_gpu_layers == 9 and cpu_build.fits
    assert any("no ROCm (HIP) backend" in w for w in cpu_build.warnings)
    forced = plan_memory(path, target=unusable, n_gpu_layers=4)
    assert forced.n_gpu_layers == 0 and any("cannot use GPU0" in w for w in forced.warnings)


def test_default_margin_and_ram_check(tmp_path):
    path = write_model(tmp_path / "m.gguf", "llama")
    plan = plan_memory(path, n_ctx=2048, target=OffloadTarget("GPU0", free=20 << 30, total=24 << 30))
    assert plan.margin == int((24 << 30) * 0.05) and plan.warnings == ()
    starved = plan_memory(path, n_ctx=2048, ram_available=1024)
    assert not starved.fits and "of RAM" in starved.warnings[0] and "only 0.00 MiB is available" in starved.warnings[0]


def test_one_byte_formatter():
    import inference.budget as budget

    assert (budget.format_bytes(None), budget.format_bytes(384 * MIB), budget.format_bytes(24 << 30)) == (
        "unknown", "384.00 MiB", "24.00 GiB")
    assert not hasattr(budget, "_fmt")


def test_embedder_estimate_matches_the_measured_default():
    fp = embedder_footprint()
    assert 360 * MIB < fp.total < 400 * MIB  # measured: 384 MiB resident for a 32 × 256-token batch
    assert embedder_footprint(batch_size=8).working < fp.working


def test_plan_json_has_the_documented_fields(tmp_path):
    out = plan_memory(write_model(tmp_path / "m.gguf", "llama"), embedder=embedder_footprint()).to_json()
    assert {"weights", "kv_cache", "compute", "embedder", "n_layers", "n_gpu_layers", "fits", "device"} <= set(out)
    assert out["weights"] > 0 and out["embedder"] > 0 and out["device"] == "cpu"


# --- reading back what llama.cpp did --------------------------------------------------------------

ROCM_LOG = """\
load_tensors: layer   0 assigned to device ROCm0, is_swa = 0
load_tensors: layer   1 assigned to device ROCm0, is_swa = 0
load_tensors: layer   2 assigned to device ROCm0, is_swa = 0
load_tensors: offloading 2 repeating layers to GPU
load_tensors: offloading output layer to GPU
load_tensors: offloaded 3/3 layers to GPU
load_tensors:   CPU_Mapped model buffer size =     0.07 MiB
load_tensors:        ROCm0 model buffer size =     0.40 MiB
llama_context: n_ctx         = 1024
llama_context: n_ubatch      = 512
llama_context: flash_attn    = disabled
llama_context:  ROCm_Host  output buffer size =     0.00 MiB
llama_kv_cache:      ROCm0 KV buffer size =     0.25 MiB
llama_kv_cache: size =    0.25 MiB (  1024 cells,   2 layers,  1/1 seqs), K (f16):    0.12 MiB, V (f16):    0.12 MiB
sched_reserve:      ROCm0 compute buffer size =    10.76 MiB
sched_reserve:  ROCm_Host compute buffer size =     0.14 MiB
"""


def test_parse_a_rocm_load_log():
    r = parse_load_log(ROCM_LOG)
    assert r.layer_devices == ("ROCm0", "ROCm0", "ROCm0") and r.offloaded == 3 and r.n_gpu_layers == 3
    assert r.total("model", gpu=True) == round(0.40 * MIB) and r.total("model", gpu=False) == round(0.07 * MIB)
    assert r.total("compute", gpu=False) == round(0.14 * MIB)  # pinned host memory counts as RAM
    assert (r.kv_cells, r.n_ctx, r.n_ubatch, r.flash_attn) == ((1024,), 1024, 512, "disabled")


def test_comparison_explains_a_cpu_only_load(tmp_path):
    path = write_model(tmp_path / "m.gguf", "llama")
    plan = plan_memory(path, n_ctx=1024, target=OffloadTarget("GPU0", 8 << 30, 8 << 30))
    cpu_report = load_report(path, n_ctx=1024, n_gpu_layers=-1)  # this llama.cpp has no GPU backend
    rows = {c.component: c for c in compare(plan, cpu_report)}
    assert (rows["n_gpu_layers"].planned, rows["n_gpu_layers"].actual) == (3, 0)
    assert "every layer on the CPU" in rows["n_gpu_layers"].why
    assert rows["kv_cache"].why is None  # the same bytes, only in RAM instead of VRAM
    gpu_rows = {c.component: c for c in compare(plan, parse_load_log(ROCM_LOG))}
    assert gpu_rows["n_gpu_layers"].why is None


def test_model_load_keeps_llama_cpps_report(tmp_path):
    import inference.offload as ll
    from inference.llm import LlamaCppModel

    path = write_model(tmp_path / "m.gguf", "llama")
    first = LlamaCppModel(path, n_ctx=512, n_threads=2).load_report
    second = LlamaCppModel(path, n_ctx=1024, n_threads=2).load_report
    assert within(2 * 512 * 2 * 2 * 32, first.total("KV"), 0.0) and first.n_gpu_layers == 0
    assert len(first.layer_devices) == 3 and first.kv_cells == (512,) and second.kv_cells == (1024,)
    assert ll._sink is None  # nothing is collected outside a load
    # ... and llama-cpp-python's own log handler is back in place.
    import ctypes

    import llama_cpp._logger as lcl

    current, data = llama_cpp.llama_log_callback(), ctypes.c_void_p()
    llama_cpp.llama_log_get(ctypes.byref(current), ctypes.byref(data))
    address = ctypes.cast(current, ctypes.c_void_p).value
    assert address == ctypes.cast(lcl.llama_log_callback, ctypes.c_void_p).value


@pytest.mark.slow
def test_real_model_plan_matches_llama_cpp():
    from inference.models import chat_model_path

    path = chat_model_path("smollm2-135m-instruct-q4_1", Path(__import__("os").environ["HEARTH_DATA_DIR"]) / "cache")
    for n_ctx in (2048, 8192):
        report = load_report(path, n_ctx=n_ctx)
        plan = plan_memory(path, n_ctx=n_ctx)
        for row in compare(plan, report):
            assert within(row.planned, row.actual, 0.005), row


def _usable_amd_gpu() -> bool:
    try:
        from inference.hardware import detect

        target = detect().offload_target()
        return bool(target and target.usable and target.backend in ("rocm", "vulkan"))
    except Exception:
        return False


@pytest.mark.amdgpu
@pytest.mark.skipif(not _usable_amd_gpu(), reason="needs an AMD GPU and a llama.cpp built with ROCm or Vulkan")
def test_offload_plan_matches_llama_cpp_on_an_amd_gpu(tmp_path):  # pragma: no cover - needs the hardware
    from inference.hardware import detect

    path = write_model(tmp_path / "m.gguf", "qwen2", n_embd=256, n_ff=1024, n_layer=8, weight_type="q4_0")
    plan = plan_memory(path, n_ctx=4096, target=detect().offload_target())
    report = load_report(path, n_ctx=4096, n_gpu_layers=plan.n_gpu_layers)
    assert report.n_gpu_layers == plan.n_gpu_layers
    assert within(plan.kv_gpu, report.total("KV", gpu=True), 0.0)
    assert within(plan.weights_gpu, report.total("model", gpu=True), 0.05)
    assert within(plan.compute, report.total("compute"), 0.25)
