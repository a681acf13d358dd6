"""GPU configs: every card loads, inheritance, overrides, one-line errors, FP64 rates, unit coverage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpusim.config import UNIT_CLASSES, GpuConfig, apply_overrides, list_gpus, load_gpu
from gpusim.config import loader
from gpusim.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
GPU_DIR = REPO / "configs" / "gpus"
CARDS = ["gtx780", "gtx970", "gtx980", "h100", "h200", "k20x", "k40", "k80", "m2090", "titanx"]


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, path + "."))
        else:
            out[path] = v
    return out


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# --- every card ------------------------------------------------------------------------------


def test_card_ids_are_the_contract():
    assert list_gpus() == CARDS


@pytest.mark.parametrize("card", CARDS)
def test_card_loads(card):
    cfg = load_gpu(card)
    assert isinstance(cfg, GpuConfig)
    assert cfg.card == card
    assert cfg.clock_mhz > 0 and cfg.sm_count > 0
    assert set(cfg.sm.units) == set(UNIT_CLASSES)


def test_h200_is_the_h100_sm_with_its_own_memory():
    """The H200 card keeps the H100's SM and changes only what its measurements say differs."""
    h100, h200 = load_gpu("h100"), load_gpu("h200")
    assert h200.sm == h100.sm and h200.clock_mhz == h100.clock_mhz and h200.sm_count == h100.sm_count
    assert h200.memory.l2.size_bytes == 62914560  # Nsight's device__attribute_l2_cache_size on the H200
    assert h200.memory.dram.bandwidth_gb_s > 1.4 * h100.memory.dram.bandwidth_gb_s
    assert h200.memory.dram.latency_cycles == h100.memory.dram.latency_cycles
    assert h200.memory.l2.bandwidth_bytes_per_cycle > 1.15 * h100.memory.l2.bandwidth_bytes_per_cycle  # memory2_h200.json


def test_load_by_path_equals_load_by_id():
    assert load_gpu(str(GPU_DIR / "k40.yaml")) == load_gpu("k40")


def test_arch_and_proxy_note():
    assert {c: load_gpu(c).arch for c in CARDS} == {
        "k20x": "sm_35", "k40": "sm_35", "gtx780": "sm_35", "k80": "sm_35", "m2090": "sm_35",
        "gtx970": "sm_52", "gtx980": "sm_52", "titanx": "sm_52", "h100": "sm_90", "h200": "sm_90"}
    assert "proxy" in load_gpu("m2090").trace_arch_note.lower()


# --- numbers the timing model depends on -----------------------------------------------------


def _fp64_over_fp32(card: str) -> float:
    sm = load_gpu(card).sm
    fp64 = sm.units["fp64"].lanes * sm.sub_partitions
    fp32 = sm.units["fp32"].lanes * sm.sub_partitions
    if sm.fp32_lanes_shared_per_sm is not None:
        fp32 = min(fp32, sm.fp32_lanes_shared_per_sm)
    return fp64 / fp32


@pytest.mark.parametrize("card,ratio", [("gtx970", 1 / 32), ("gtx980", 1 / 32), ("titanx", 1 / 32),
                                        ("k40", 1 / 3), ("k20x", 1 / 3), ("k80", 1 / 3),
                                        ("gtx780", 1 / 24), ("h100", 1 / 2), ("m2090", 1 / 2)])
def test_fp64_rate(card, ratio):
    assert _fp64_over_fp32(card) == pytest.approx(ratio)


def test_kepler_fp32_lanes_and_register_files():
    k40 = load_gpu("k40").sm
    assert k40.units["fp32"].lanes == 48 and k40.fp32_lanes_shared_per_sm == 192
    assert k40.lanes_per_sm("fp32") == 192
    assert k40.shared_memory.bank_width_bytes == 8 and not k40.register_file.reuse_cache
    m = load_gpu("gtx970").sm
    assert (m.register_file.banks, m.register_file.bank_width_bits, m.register_file.reuse_cache) == (4, 32, True)
    assert m.units["fp64"].lanes == 1 and m.units["int"].pipe == m.units["fp32"].pipe
    h = load_gpu("h100")
    assert (h.sm.register_file.banks, h.sm.register_file.bank_width_bits) == (2, 64)
    assert h.sm.units["fp32"].latency_cycles == 4 and h.sm.units["fp64"].latency_cycles == 8
    assert h.sm.reserved_shared_per_cta == 1024 and h.sm_count == 132


def test_k80_doubles_gk110_registers_and_shared():
    k40, k80 = load_gpu("k40").sm, load_gpu("k80").sm
    assert k80.registers == 2 * k40.registers
    assert k80.shared_bytes == 114688 and k40.shared_bytes == 49152


def test_every_opcode_unit_class_has_a_unit_in_every_card():
    classes = set()
    for table in sorted((REPO / "gpusim" / "arch").glob("sm_*.yaml")):
        rows = yaml.safe_load(table.read_text())["opcodes"]
        classes |= {row["unit"] for row in rows.values()}
    assert classes <= set(UNIT_CLASSES)
    for card in CARDS:
        missing = classes - set(load_gpu(card).sm.units)
        assert not missing, f"{card} lacks {missing}"


def test_every_number_in_the_yaml_has_a_comment():
    """Each line that sets a numeric value carries a '#' comment (source or assumption)."""
    number = re.compile(r":\s*-?\d")
    for path in sorted(GPU_DIR.rglob("*.yaml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            body = line.split("#", 1)[0]
            if number.search(body):
                assert "#" in line, f"{path.relative_to(REPO)}:{n}: number without a source comment"


# --- inheritance -----------------------------------------------------------------------------


def test_gtx780_differs_from_k40_only_where_it_says():
    k40 = _flatten(load_gpu("k40").model_dump())
    g = _flatten(load_gpu("gtx780").model_dump())
    diff = {k for k in k40 if k40[k] != g[k]}
    assert diff == {"name", "card", "clock_mhz", "sm_count", "sm.units.fp64.lanes", "memory.dram.bandwidth_gb_s"}
    assert g["sm.units.fp64.pipe"] == "fp64" and g["sm.units.fp64.latency_cycles"] == k40["sm.units.fp64.latency_cycles"]


def test_card_overriding_one_field_keeps_its_preset(tmp_path):
    p = _write(tmp_path, "mycard.yaml", "extends: gm204\nname: test\ncard: mycard\nclock_mhz: 1000.0\n"
               "sm_count: 2\nsm:\n  units:\n    fp64: {latency_cycles: 40}\n")
    cfg = load_gpu(str(p))
    ref = load_gpu("gtx980")
    assert cfg.sm.units["fp64"].latency_cycles == 40
    assert cfg.sm.units["fp64"].lanes == ref.sm.units["fp64"].lanes == 1
    assert cfg.sm.units["fp32"] == ref.sm.units["fp32"]
    assert cfg.memory == ref.memory and cfg.sm.register_file == ref.sm.register_file


def test_extends_another_card(tmp_path):
    p = _write(tmp_path, "fast970.yaml", "extends: gtx970\ncard: fast970\nclock_mhz: 1268.0\n")
    cfg = load_gpu(str(p))
    assert cfg.clock_mhz == 1268.0 and cfg.memory.l2.size_bytes == load_gpu("gtx970").memory.l2.size_bytes


def test_extends_cycle_is_an_error(tmp_path):
    _write(tmp_path, "a.yaml", "extends: b\n")
    _write(tmp_path, "b.yaml", "extends: a\n")
    with pytest.raises(SpecError) as exc:
        load_gpu(str(tmp_path / "a.yaml"))
    assert "cycle" in _one_line(exc) and "a -> b -> a" in str(exc.value)


def test_extends_unknown_is_an_error(tmp_path):
    p = _write(tmp_path, "x.yaml", "extends: gk999\n")
    with pytest.raises(SpecError) as exc:
        load_gpu(str(p))
    msg = _one_line(exc)
    assert "gk999" in msg and "gk110" in msg


# --- errors ----------------------------------------------------------------------------------


def test_unknown_card():
    with pytest.raises(SpecError) as exc:
        load_gpu("gtx9999")
    msg = _one_line(exc)
    assert "unknown GPU 'gtx9999'" in msg and "k40" in msg and "h100" in msg


@pytest.mark.parametrize("name, text, path", [
    ("typo.yaml", "extends: k40\ncard: typo\nsm:\n  register_file:\n    bankz: 4\n", "sm.register_file.bankz"),
    ("bad.yaml", "extends: k40\ncard: bad\nsm:\n  shared_memory:\n    bank_width_bytes: '8'\n",
     "sm.shared_memory.bank_width_bytes"),
    ("stage.yaml", "extends: h100\ncard: stage\nmemory:\n  l1:\n    data_stage: fifo\n", "memory.l1.data_stage"),
    ("tag.yaml", "extends: h100\ncard: tag\nmemory:\n  l1:\n    tag_lines_per_cycle: 0\n",
     "memory.l1.tag_lines_per_cycle"),
    ("cta.yaml", "extends: h100\ncard: cta\nsm:\n  cta_launch_cycles: -1\n", "sm.cta_launch_cycles"),
    ("spread.yaml", "extends: h100\ncard: spread\nmemory:\n  dram:\n    write_wait_spread: 1.5\n",
     "memory.dram.write_wait_spread"),
    ("sq.yaml", "extends: h100\ncard: sq\nsm:\n  shared_access_queue: sometimes\n", "sm.shared_access_queue"),
    ("retire.yaml", "extends: h100\ncard: retire\ncta_retire_cycles: -1.19\n", "cta_retire_cycles"),
    ("rho.yaml", "extends: h100\ncard: rho\nmemory:\n  dram:\n    load_rho_max: 1.0\n", "memory.dram.load_rho_max"),
    ("ww.yaml", "extends: h100\ncard: ww\nmemory:\n  dram:\n    write_wait_cycles: -800\n",
     "memory.dram.write_wait_cycles"),
    ("rs.yaml", "extends: h100\ncard: rs\nmemory:\n  dram:\n    read_spread_bytes: 1000\n", "memory.dram"),
    ("rw.yaml", "extends: h100\ncard: rw\nmemory:\n  dram:\n    read_spread_cycles: -450\n",
     "memory.dram.read_spread_cycles"),
    ("rwide.yaml", "extends: h100\ncard: rwide\nmemory:\n  dram:\n    read_spread_cycles: 1200\n", "memory.dram"),
    ("cw.yaml", "extends: h100\ncard: cw\nsm:\n  shared_memory:\n    l1_copy_wavefronts: -1.6\n",
     "sm.shared_memory.l1_copy_wavefronts"),
], ids=["unknown-field", "wrong-type", "data-stage-not-shared-or-booked", "tag-rate-not-positive",
        "cta-launch-negative", "dram-write-spread-above-one", "shared-queue-not-boolean", "cta-retire-negative", "dram-rho-max-not-below-one",
        "dram-write-wait-negative", "dram-read-spread-block-not-power-of-two", "dram-read-spread-negative",
        "dram-read-spread-over-a-third-of-latency",
        "copy-wavefronts-negative"])
def test_bad_field_is_one_line_naming_file_and_path(tmp_path, name, text, path):
    p = _write(tmp_path, name, text)
    with pytest.raises(SpecError) as exc:
        load_gpu(str(p))
    msg = _one_line(exc)
    assert name in msg and path in msg


def test_missing_unit_class(tmp_path):
    base = yaml.safe_load((GPU_DIR / "arch" / "gm204.yaml").read_text())
    del base["sm"]["units"]["sfu"]
    base.update(name="x", card="nounit", clock_mhz=1000.0, sm_count=1)
    p = _write(tmp_path, "nounit.yaml", yaml.safe_dump(base))
    with pytest.raises(SpecError) as exc:
        load_gpu(str(p))
    msg = _one_line(exc)
    assert "sm.units" in msg and "sfu" in msg


def test_duplicate_key_and_bad_yaml(tmp_path):
    p = _write(tmp_path, "dup.yaml", "extends: k40\nclock_mhz: 1.0\nclock_mhz: 2.0\n")
    with pytest.raises(SpecError) as exc:
        load_gpu(str(p))
    assert "duplicate key 'clock_mhz'" in _one_line(exc) and "dup.yaml:3" in str(exc.value)
    p = _write(tmp_path, "broken.yaml", "sm: [1, 2\n")
    with pytest.raises(SpecError) as exc:
        load_gpu(str(p))
    assert "broken.yaml" in _one_line(exc)


def test_card_must_match_file_name(tmp_path, monkeypatch):
    for f in ("k40.yaml",):
        (tmp_path / f).write_text((GPU_DIR / f).read_text().replace("card: k40", "card: k41"))
    (tmp_path / "arch").symlink_to(GPU_DIR / "arch")
    monkeypatch.setattr(loader, "GPU_DIR", tmp_path)
    monkeypatch.delenv("GPUSIM_GPU_DIR", raising=False)
    with pytest.raises(SpecError) as exc:
        load_gpu("k40")
    assert "k41" in _one_line(exc)


def test_sm35_cannot_honour_control_codes(tmp_path):
    p = _write(tmp_path, "cc.yaml", "extends: k40\ncard: cc\nsm:\n  scheduler:\n    honour_control_codes: true\n")
    with pytest.raises(SpecError) as exc:
        load_gpu(str(p))
    assert "honour_control_codes" in _one_line(exc)


# --- overrides -------------------------------------------------------------------------------


def test_apply_overrides_changes_and_revalidates():
    base = load_gpu("gtx970")
    new = apply_overrides(base, {"sm.register_file.banks": 8, "clock_mhz": 1268, "sm.units.fp64.lanes": 2})
    assert isinstance(new, GpuConfig)
    assert new.sm.register_file.banks == 8 and new.clock_mhz == 1268.0 and new.sm.units["fp64"].lanes == 2
    assert new.sm.units["fp64"].latency_cycles == base.sm.units["fp64"].latency_cycles
    assert base.sm.register_file.banks == 4 and base.sm.units["fp64"].lanes == 1  # original untouched
    assert new.fingerprint() != base.fingerprint()
    assert apply_overrides(base, {}) == base


def test_apply_overrides_accepts_a_sub_mapping():
    new = apply_overrides(load_gpu("k40"), {"sm.units.fp64": {"pipe": "fp64", "lanes": 2, "latency_cycles": 10}})
    assert new.sm.units["fp64"].lanes == 2


@pytest.mark.parametrize("overrides,needle", [
    ({"sm.register_file.bankz": 8}, "sm.register_file.bankz"),
    ({"sm.units.tensor.lanes": 8}, "sm.units.tensor.lanes"),
    ({"clock_mhz.x": 1}, "clock_mhz.x"),
    ({"sm.register_file.banks": "eight"}, "sm.register_file.banks"),
    ({"sm.register_file.banks": 8.5}, "sm.register_file.banks"),
    ({"sm.register_file.bank_width_bits": 48}, "sm.register_file.bank_width_bits"),
    ({"sm.scheduler.policy": "fifo"}, "sm.scheduler.policy"),
    ({"sm.units.fp64.lanes": 0}, "sm.units.fp64.lanes"),
    ({"sm.register_file.read_ports": 0}, "sm.register_file.read_ports"),
    ({"sm.register_file.read_ports": "two"}, "sm.register_file.read_ports"),
    ({"sm.register_file": 4}, "sm.register_file"),
    ({"memory.l1.sector_bytes": 24}, "memory.l1"),
])
def test_apply_overrides_errors_name_the_path(overrides, needle):
    with pytest.raises(SpecError) as exc:
        apply_overrides(load_gpu("k40"), overrides)
    assert needle in _one_line(exc)


def test_apply_overrides_cross_field_rule():
    with pytest.raises(SpecError) as exc:
        apply_overrides(load_gpu("k40"), {"sm.scheduler.honour_control_codes": True})
    msg = _one_line(exc)
    assert "honour_control_codes" in msg


def test_load_lane_bytes_must_be_positive():
    """memory.l1.load_lane_bytes_per_cycle (the L1's lane data per cycle, H100: 128) below 1 is one error naming it."""
    assert load_gpu("h100").memory.l1.load_lane_bytes_per_cycle == 128
    with pytest.raises(SpecError, match="memory.l1.load_lane_bytes_per_cycle"):
        apply_overrides(load_gpu("h100"), {"memory.l1.load_lane_bytes_per_cycle": 0})
