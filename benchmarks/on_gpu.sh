#!/usr/bin/env bash
# The GPU checks in one call: `bash benchmarks/on_gpu.sh OUT_DIR` on a machine with a CUDA GPU, from the project root,
# with the project importable (the package installed, or on PYTHONPATH with launchers/ and benchmarks/). Each step has
# a time limit and its own log in OUT_DIR; a step that fails or runs out of time leaves the others' results. Last, the
# TARGET lines of every log. `make bench-gpu` runs it into gpu-logs/.
#   1. what limits the step: a profile of base, big (translation) and llama_paper (language model), bf16, paper batch
#   2. the step's throughput against nn.Transformer and MarianMT and the bf16 matmul peak, eager and compiled
#   3. pytest -m cuda
#   4. a real job (base, ≈25k-token batches), eager then compiled: curves, compile time, the estimate's error
set -uo pipefail
out=${1:?usage: benchmarks/on_gpu.sh OUT_DIR}
mkdir -p "$out"
py=${GPU_PY:-python3}
batch=(--sentences 512 --length 48 --vocab 32000)
step() {  # step NAME SECONDS COMMAND...: runs COMMAND under a time limit, its output in OUT_DIR/NAME.log
  local name=$1 limit=$2; shift 2
  echo "== $name (limit ${limit}s): $*"
  local started=$SECONDS
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  echo "   exit $? after $((SECONDS - started)) s"
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,temperature.gpu --format=csv,noheader
$py -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
step profile "${PROFILE_S:-90}" $py benchmarks/step_profile.py --device cuda --models base big --llama llama_paper \
  "${batch[@]}" --steps 5
step throughput "${THROUGHPUT_S:-240}" $py benchmarks/train_throughput.py --device cuda --models base big \
  --llama llama_paper "${batch[@]}" --repeats 3 --variant compiled:trainer.compile=true
step pytest_cuda "${PYTEST_S:-150}" $py -m pytest -q -m cuda -p no:cacheprovider tests/test_cuda.py -n 4
for mode in eager compiled; do
  compile=$([ $mode = compiled ] && echo true || echo false)
  step "job_$mode" "${JOB_S:-120}" $py benchmarks/job_throughput.py --device cuda --threads 4 --model base \
    --epochs 3 trainer.max_tokens=25000 trainer.compile=$compile
done
echo "== TARGET lines"
grep -h "TARGET\|MEASUREMENT ERROR\|FAILED\|passed\|failed" "$out"/*.log
