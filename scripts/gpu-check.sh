#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: grades exercises/device-agnostic-training on the GPU
# through the Docker backend, exactly as a `grading-gpu` worker does (device "cuda", the
# GPU given to the sandbox by a device request), and prints the comparison with the CPU
# reference. Exits non-zero, saying why, when there is no GPU to use.
#
#   bash scripts/gpu-check.sh
#
# Needs: the NVIDIA driver and Container Toolkit (docker run --gpus works), the Docker
# Engine, and gradlab-sandbox-cuda:latest (built here by `docker/build-sandbox-image.sh
# --cuda` when missing, which needs PyPI once). GRADLAB_SANDBOX_GPU_IMAGE overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${GRADLAB_SANDBOX_GPU_IMAGE:-gradlab-sandbox-cuda:latest}"
EXERCISE=exercises/device-agnostic-training

fail() {
  echo "gpu-check: FAILED: $*" >&2
  exit 1
}

command -v nvidia-smi >/dev/null || fail "no NVIDIA driver here (nvidia-smi is missing): run this on a GPU machine"
nvidia-smi -L >/dev/null 2>&1 || fail "nvidia-smi finds no GPU: $(nvidia-smi -L 2>&1 | head -1)"
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
bash scripts/setup-docker.sh --engine
[ -x .venv/bin/python ] || bash scripts/setup-python.sh
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "building $IMAGE (torch with CUDA from PyPI)"
  bash docker/build-sandbox-image.sh --cuda >/dev/null
fi
docker run --rm --network none --gpus 1 "$IMAGE" python -I -c \
  'import torch, sys; ok = torch.cuda.is_available(); print("sandbox sees:", torch.__version__, torch.cuda.get_device_name(0) if ok else "no GPU"); sys.exit(not ok)' ||
  fail "the sandbox image cannot use the GPU (NVIDIA Container Toolkit installed? a CUDA build of torch in $IMAGE?)"

GRADLAB_GPU_IMAGE="$IMAGE" EXERCISE="$EXERCISE" PYTHONPATH=platform:. .venv/bin/python - <<'PY'
import math
import os
import sys

from grader.engine import GradeJob, grade_with_capture
from grader.sandbox.docker import DockerSandbox
from grader.spec import load_package

package = load_package(os.environ["EXERCISE"])
gpu = DockerSandbox(image=os.environ["GRADLAB_GPU_IMAGE"], gpu=True)  # a grading-gpu worker
print("runtime:", gpu.runtime_key("cuda"), "| reference:", gpu.runtime_key("cpu"))
job = GradeJob(package, package.solution, device="cuda")
report, capture = grade_with_capture(job, sandbox=gpu, cache=None)
print(f"status {report.status}, score {report.score}/{report.max_score}, {report.duration_s:.2f} s")
for check in report.checks:
    print(f"  {'PASS' if check.passed else 'FAIL'} {check.name}: {check.message}")
curves = report.curves or {}
learner, reference = curves.get("learner") or [], curves.get("reference") or []
print("step  loss on GPU (learner run)   loss on CPU (reference)   |difference|")
for step, (on_gpu, on_cpu) in enumerate(zip(learner, reference)):
    print(f"{step:>4}  {on_gpu!s:>26}   {on_cpu!s:>23}   {abs(float(on_gpu) - float(on_cpu)):.3e}")
# Evidence from inside the sandbox, not the backend's claim: where the model's tensors were.
raw = dict(capture.raw) if capture is not None else {}
model = (raw.get("variables") or {}).get("model") or {}
devices = sorted({p.get("device", "?") for p in (model.get("params") or {}).values()})
ran_on_gpu = raw.get("device") == "cuda" and any(d.startswith("cuda") for d in devices)
print("runtime:", report.runtime, "| sandbox saw:", raw.get("device"), "| model on:", devices)
if report.status != "graded" or not report.passed or not ran_on_gpu or len(learner) != len(reference):
    sys.exit("gpu-check: FAILED: the reference solution did not pass on the GPU against the CPU reference")
worst = max((abs(float(a) - float(b)) for a, b in zip(learner, reference)), default=math.nan)
print(f"gpu-check: OK: the GPU run matches the CPU reference (largest loss difference {worst:.3e})")
PY
