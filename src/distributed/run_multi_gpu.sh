#!/usr/bin/env bash
# One call for a multi-GPU machine: build what the sharded ops need, run the distributed tests
# (ctest -L distributed: 2- and 4-GPU tests, skipped with fewer GPUs) and the sharded benchmark
# over every GPU (and over 2 when there are 4), writing everything into OUT.
#   src/distributed/run_multi_gpu.sh OUT [BUILD_DIR]
# NCCL's NVLink multicast stays off (NCCL_NVLS_ENABLE=0) in every test and benchmark.
set -uo pipefail
out=${1:?usage: run_multi_gpu.sh OUT [BUILD_DIR]}
build=${2:-build/dist}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "GPUs: $gpus" | tee "$out/summary.txt"
nvidia-smi topo -m > "$out/topology.txt" 2>&1 || true

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
fi
cmake --build "$build" --target rooflab_distributed_tests rooflab_cli rooflab_cpu_tests -j "$(nproc)" \
  > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }

status=0
(cd "$build" && ctest -L distributed --output-on-failure --output-junit "$out/distributed_tests.xml") \
  > "$out/distributed_tests.log" 2>&1 || status=1
(cd "$build" && ctest -R 'DistributedMath' --output-on-failure) > "$out/distributed_cpu_tests.log" 2>&1 || status=1
tail -5 "$out/distributed_tests.log" | tee -a "$out/summary.txt"

rooflab="$build/rooflab"
for n in $( [ "$gpus" -ge 4 ] && echo 2 4 || echo "$gpus" ); do
  [ "$n" -ge 2 ] || continue
  timeout 900 "$rooflab" bench all --gpus "$n" --reps 10 --out "$out/distributed_${n}gpu.json" \
    > "$out/bench_${n}gpu.txt" 2>&1 || status=1
  cat "$out/bench_${n}gpu.txt" | tee -a "$out/summary.txt"
done
timeout 300 "$rooflab" info > "$out/info.txt" 2>&1 || status=1
echo "status $status" | tee -a "$out/summary.txt"
exit $status
