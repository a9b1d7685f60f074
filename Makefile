# The two commands: `make demo` and `make test`. Both set everything up on a fresh machine with Python 3.11, no root.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo demo-mlm test test-bench setup data run table bench bench-gpu bench-collect clean-outputs slurm-up slurm-down

# The seven freeze rows behind findings F1-F3 on the embedded corpus (F3 holds, F1 and F2 do not: README,
# docs/studies.md), then the seven language-model rows behind F5, their tables and curves: 15 min 10 s on 2 CPU cores
# on 2026-11-24, with the test suite running alongside. The leading `-` collects a table even when a job failed:
# failures are listed under it.
demo: setup
	-$(PY) -m frozen_sweep -m experiment=demo_table
	$(PY) -m frozen_sweep.collect outputs/demo_table --reference paper_big --claims \
	    --out outputs/demo_table/table.md --plot outputs/demo_table/curves.png
	-$(PY) -m frozen_sweep -m experiment=lm_demo_table
	$(PY) -m frozen_sweep.collect outputs/lm_demo_table --reference paper_lm --claims \
	    --out outputs/lm_demo_table/table.md --plot outputs/lm_demo_table/curves.png
	cat outputs/demo_table/table.md outputs/lm_demo_table/table.md

# Masked language modelling on the CPU (docs/studies.md): the seven freeze rows (finding M1) and five reservoir runs.
demo-mlm: setup
	-$(PY) -m frozen_sweep -m experiment=mlm_demo_table
	$(PY) -m frozen_sweep.collect outputs/mlm_demo_table --claims \
	    --out outputs/mlm_demo_table/table.md --plot outputs/mlm_demo_table/curves.png
	-$(PY) -m frozen_sweep -m experiment=reservoir_mlm
	$(PY) -m frozen_sweep.collect outputs/reservoir_mlm --claims \
	    --out outputs/reservoir_mlm/table.md --plot outputs/reservoir_mlm/aucc.png
	cat outputs/mlm_demo_table/table.md outputs/reservoir_mlm/table.md

# One job with the default config (7 min 25 s on 2 quiet CPU cores: test BLEU 23.6 on the embedded corpus).
run: setup
	$(PY) -m frozen_sweep

FORMAT ?= md
table:  # every result under outputs/
	$(PY) -m frozen_sweep.collect outputs --format $(FORMAT)

bench-collect: setup
	$(PY) benchmarks/collect_records.py

# Every benchmark (docs/performance.md): figures and ratios measured side by side, targets met / not met.
# ≈6 min on a quiet 2-core CPU before cpu_bf16 (two 3,400-update demo jobs, ≈7 min) and sweep_tail (≈5 min) joined:
# ≈18 min in all, plus data_scale (0.1M-4M-pair corpora under /tmp, ≈20 min at load 9-13; its job memory at
# 20k/400k pairs ≈5 min more), not timed as a whole.
# THREADS=1 for one thread. MarianMT needs the `bench` extra.
THREADS ?= 2
BENCHMARKS := train_throughput freeze_speedup reservoir_step decode checkpoint_size batching sweep_overhead logging_overhead \
	busy_cpu sweep_tail cpu_bf16 collect_records data_scale hub_prepare distributed inference_engines
bench: setup $(VENV)/.bench-installed
	@for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; $(PY) benchmarks/$$b.py --threads $(THREADS) || exit 1; echo; done

# The GPU benchmarks, on a machine with a CUDA GPU and this project installed with the `bench` extra (MarianMT):
# `make bench-gpu GPU_PY=python3` (GPU_PY: the Python that has the CUDA build of torch). Side by side in one run each;
# benchmarks/on_gpu.sh's steps (profile, throughput, pytest -m cuda, a real job eager and compiled) log to gpu-logs/.
GPU_PY ?= $(PY)
bench-gpu:
	GPU_PY=$(GPU_PY) bash benchmarks/on_gpu.sh gpu-logs
	$(GPU_PY) benchmarks/freeze_speedup.py --device cuda --model base --sentences 256 --length 48
	$(GPU_PY) benchmarks/packing.py --device cuda --jobs 4 --model demo

$(VENV)/.bench-installed: $(STAMP)
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

# Every core runs tests (pytest-xdist); the tests that share the machine's one SLURM cluster run in one worker.
test: setup
	$(PY) -m pytest -q -n auto --dist loadgroup

# The benchmark scripts that launch sweeps or rank processes, run end to end at tiny sizes (not timed): ≈4 min more.
test-bench: setup
	$(PY) -m pytest -q -m bench

setup: $(STAMP)

# torch first and pinned: on these machines 2.13.0 resolves to a local CPU build; an unpinned torch pulls CUDA wheels.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# Not needed to run anything: the embedded corpus ships in the package (frozen_sweep/data/verses/). This regenerates
# it from Debian's SWORD modules (installed when missing, which needs root), e.g. after changing the extraction code.
data: setup
	scripts/install_bible.sh
	$(PY) scripts/ship_verses.py

clean-outputs:
	rm -rf outputs/*/

# A real single-node SLURM cluster on this machine, for `hydra/launcher=slurm` (needs root; installs Debian's SLURM
# packages when missing; state in $FROZEN_SWEEP_SLURM_DIR, default /tmp/frozen_sweep_slurm).
slurm-up:
	scripts/slurm_up.sh

slurm-down:
	scripts/slurm_down.sh
