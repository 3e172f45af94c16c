"""The device a kernel is optimized for: what launch rules and the cost model hold a launch against.

One description for every pass and the cost model (no pass keeps its own constants). The optimizer reads it from the
MEP (s2s/optimize/target.py: the device its measurements ran on, the copy bandwidth measured there); the H200 is only
the default when nothing is known. Figures are the vendors' published ones for the SXM / OAM parts.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TargetDevice:
    name: str = "NVIDIA H200"
    sms: int = 132  # streaming multiprocessors (compute units)
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    warp_size: int = 32
    registers_per_sm: int = 65536  # 32-bit registers
    shared_per_block: int = 48 * 1024  # bytes a block gets without opting in
    shared_per_block_optin: int = 227 * 1024
    shared_per_sm: int = 228 * 1024
    bandwidth: float = 4.8e12  # DRAM bytes/s (datasheet)
    copy_bandwidth: float = 4.216e12  # bytes/s a device-to-device copy reaches (measured on the H200, bench/results/gpu-zoo)
    flops: float = 6.7e13  # FP32 FLOP/s, no tensor cores
    clock_hz: float = 1.98e9  # boost clock: the L1's bytes per second with `sms`
    source: str = "default (nothing known about the device): NVIDIA H200"

    @property
    def thread_slots(self) -> int:
        """Threads the whole device holds at once."""
        return self.sms * self.threads_per_sm

    @property
    def l1_bandwidth(self) -> float:
        """Bytes/s all SMs' L1 caches deliver (128 bytes a clock each)."""
        return self.sms * 128 * self.clock_hz


H200 = TargetDevice()

# by a substring of the name a runtime reports ("NVIDIA H200", "NVIDIA A100-SXM4-80GB"); the first match wins
KNOWN: tuple[tuple[str, TargetDevice], ...] = (
    ("H200", H200),
    ("H100", replace(H200, name="NVIDIA H100", bandwidth=3.35e12, copy_bandwidth=0.88 * 3.35e12, clock_hz=1.98e9)),
    ("A100", TargetDevice(name="NVIDIA A100", sms=108, shared_per_block_optin=163 * 1024, shared_per_sm=164 * 1024,
                          bandwidth=2.039e12, copy_bandwidth=0.88 * 2.039e12, flops=1.95e13, clock_hz=1.41e9)),
    ("MI300X", TargetDevice(name="AMD MI300X", sms=304, threads_per_sm=2048, blocks_per_sm=32, warp_size=64,
                            registers_per_sm=131072, shared_per_block=64 * 1024, shared_per_block_optin=64 * 1024,
                            shared_per_sm=64 * 1024, bandwidth=5.3e12, copy_bandwidth=0.8 * 5.3e12, flops=1.634e14,
                            clock_hz=2.1e9)),
)


def device_named(name: str, copy_bandwidth: float | None = None) -> TargetDevice:
    """The description of the device a runtime calls `name`, with its measured copy bandwidth (bytes/s) where given;
    an unknown name keeps the H200's figures and says so."""
    found = next((d for key, d in KNOWN if key.lower() in name.lower()), None) if name else None
    if found is None:
        base = replace(H200, name=name or H200.name,
                       source=f"{name}: not a device s2s describes, the H200's figures" if name else H200.source)
    else:
        base = replace(found, source=f"{name}: {found.name}'s published figures")
    if copy_bandwidth:
        base = replace(base, copy_bandwidth=copy_bandwidth, source=base.source + f"; copy bandwidth measured {copy_bandwidth / 1e9:.0f} GB/s")
    return base
