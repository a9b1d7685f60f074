"""What of the CPU, besides its threads, changes a job's numbers: torch's kernel level and the precision a CPU job
trains in; and the CPU's name. No torch here, so that the fingerprint (frozen_sweep.job.fingerprint) can name them before any
job starts: the kernel level and native bf16 are read from the CPU's flags as torch reads them, and the job records
torch's own answers beside them (tests/test_run_dir.py checks that both agree).

- Kernels: torch's CPU kernels are vectorised for the best level the CPU has (AVX-512 where it has AVX512F/BW/VL/DQ
  and FMA, else AVX2 with FMA, else scalar "DEFAULT"), or for ATEN_CPU_CAPABILITY where set
  (`torch.backends.cpu.get_cpu_capability()`). Another level sums in another order: other numbers.
- Precision: fp32 unless `trainer.amp_cpu=true` asks for bf16 autocast; `trainer.amp_cpu=null` asks for bf16 where the
  CPU computes it natively (oneDNN's test: AVX-512 core, or AVX-NE-CONVERT with AVX-VNNI-INT8). The default is
  fp32 so that one command trains in one precision on every CPU (docs/training.md, "bf16 on the CPU").
"""

import os
import platform
from typing import Optional

from frozen_sweep.system.threads import usable_cores

KERNELS_VARIABLE = "ATEN_CPU_CAPABILITY"  # torch's CPU kernels, when forced to other than the CPU's best
LEVELS = {"default": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}  # ATEN_CPU_CAPABILITY → torch's name
FP32, BF16 = "fp32", "bf16 autocast"  # the precisions a job trains in (validation and decoding stay fp32)


def cpu_info(field: str) -> str:
    """The first `field` line of /proc/cpuinfo ("" where there is none, or no /proc: not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.split(":")[0].strip() == field), "")
    except OSError:
        return ""


def cpu_flags() -> set[str]:
    return set(cpu_info("flags").split())


def kernel_level(environ=os.environ) -> str:
    """torch's CPU kernel level, as torch.backends.cpu.get_cpu_capability() names it: ATEN_CPU_CAPABILITY where it
    names one (torch ignores any other value), else the best the CPU's flags allow (x86: AVX512, AVX2, DEFAULT)."""
    forced = environ.get(KERNELS_VARIABLE, "")
    if forced in LEVELS:
        return LEVELS[forced]
    flags = cpu_flags()
    if {"avx512vl", "avx512bw", "avx512dq", "fma"} <= flags:
        return "AVX512"
    return "AVX2" if {"avx2", "fma"} <= flags else "DEFAULT"


def native_bf16() -> bool:
    """Whether oneDNN computes bf16 natively here (AVX-512 core, or AVX-NE-CONVERT with AVX-VNNI-INT8); elsewhere it
    emulates bf16, slower than fp32."""
    flags = cpu_flags()
    return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags or {"avx_ne_convert", "avx_vnni_int8"} <= flags


def cpu_precision(amp: bool, amp_cpu: Optional[bool]) -> str:
    """The precision a CPU job trains in: bf16 autocast when trainer.amp and trainer.amp_cpu ask for it (null: where
    the CPU computes bf16 natively), else fp32."""
    return BF16 if amp and (native_bf16() if amp_cpu is None else amp_cpu) else FP32


def cpu_model() -> str:
    """The CPU's model name, e.g. "AMD EPYC 9B14" (the processor's name where there is no /proc/cpuinfo)."""
    return cpu_info("model name") or platform.processor() or platform.machine()


def machine() -> str:
    """The CPU this job runs on, for its record: model name and the cores it may use, e.g. "AMD EPYC 9B14, 2 cores"."""
    return f"{cpu_model()}, {usable_cores()} cores"


def model_of(machine_text: Optional[str]) -> Optional[str]:
    """A record's `machine` without its cores: "AMD EPYC 9B14, 2 cores" → "AMD EPYC 9B14"."""
    return machine_text.rsplit(", ", 1)[0] if machine_text else None


def cpu_identity(threads: int, amp: bool, amp_cpu: Optional[bool], environ=os.environ) -> dict:
    """The fingerprint's part of how the CPU computes: the job's threads, torch's kernel level, the precision."""
    return {"cpu.threads": threads, "cpu.kernels": kernel_level(environ), "cpu.precision": cpu_precision(amp, amp_cpu)}
