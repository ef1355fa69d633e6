"""GPU-sharing placement as the paper's simulator does it: best-fit and Fragmentation Gradient Descent (FGD).

Reproduced from hkust-adsl/kubernetes-scheduler-simulator (Weng et al., "Beware of Fragmentation", USENIX ATC '23),
commit 8f3d6417353c5083c6d56617f255fadd8dc306bc:

- a pod is (MilliCpu, MilliGpu per GPU, GpuNumber, GpuType) (pkg/utils/utils.go `GetPodResource`); memory only
  filters (the default NodeResourcesFit);
- filter (pkg/simulator/plugin/open_gpu_share.go `Filter`, cache/gpunodeinfo.go `AllocateGpuId`): CPU, memory and
  the node's pod limit fit; a GPU pod needs a node of an accepted model (`IsNodeAccessibleToPodByType`) with one GPU
  of at least MilliGpu left (one-GPU pods) or GpuNumber wholly free GPUs;
- best-fit (plugin/best_fit_score.go `getBestFitScore`): `int64((1 - s) * 100)` with
  `s = 0.5 * cpuLeftAfter / maxCpu + 0.5 * gpuMilliLeftAfter / maxGpuMilli` (the largest node's);
- FGD (utils/frag.go `NodeGpuShareFragAmount`, `FragAmountSumExceptQ3`; plugin/fgd_score.go
  `calculateGpuShareFragExtendScore`): a node's fragmentation is, over the "typical pods" t with popularity p_t
  (utils/frag.go `GetTypicalPods`), p_t times the idle GPU milli t could not use; the score is
  `int64(sigmoid((fragBefore - fragAfter) / 1000) * 100)`; a sharing pod tries each GPU with room and keeps the
  best (lowest index on equal truncated scores);
- GPUs in the node (open_gpu_share.go `allocateGpuId`): a sharing pod takes the GPU FGD chose, or under best-fit
  the one with the least room that fits; whole-GPU pods take the lowest-index free GPUs
  (`AllocateExclusiveGpuId`);
- the node: the highest score, ties to the smallest node name (the vendored generic_scheduler.go `selectHost`
  is patched so; the names carry a random permutation prefix, core.go `syncClusterResourceList`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

WHOLE = 1000  # milli of one GPU
TYPICAL_SHARE = 0.95  # typicalPodsConfig.podPopularityThreshold: 95

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class PodShape:
    """What placement sees of a pod (memory only filters)."""

    cpu: int
    milli: int  # per GPU
    gpus: int
    spec: str  # accepted GPU models, `|`-separated; "" for any

    @property
    def total_milli(self) -> int:
        """GPU milli over all its GPUs (TotalMilliGpu)."""
        return self.milli * self.gpus

    @property
    def sharing(self) -> bool:
        """A one-GPU pod asking for part of it."""
        return self.gpus == 1 and self.milli < WHOLE


@dataclass(frozen=True)
class Typical:
    """The target workload FGD measures fragmentation against, as arrays over the typical pods."""

    cpu: IntArray
    milli: IntArray
    gpus: IntArray
    share: FloatArray
    model_ok: BoolArray  # [typical pod, node model index]

    @property
    def size(self) -> int:
        """How many typical pods."""
        return len(self.cpu)


def accepts(spec: str, model: str) -> bool:
    """IsNodeAccessibleToPodByType: an empty spec takes any model, else one of its `|`-separated names."""
    return not spec or model in spec.split("|")


def typical_pods(shapes: Sequence[PodShape], models: Sequence[str]) -> Typical:
    """utils/frag.go GetTypicalPods: the most common shapes, each with its popularity.

    Shapes by count descending (ties by the shape descending) until they cover 95 % of the pods; each gets
    p = (count/total) / (covered/total).
    """
    counts = Counter((s.cpu, s.milli, s.gpus, s.spec) for s in shapes)
    total = len(shapes)
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    kept: list[tuple[tuple[int, int, int, str], int]] = []
    covered = 0
    for key, n in ranked:
        kept.append((key, n))
        covered += n
        if covered >= TYPICAL_SHARE * total:
            break
    share = np.array([(n / total) / (covered / total) for _, n in kept], dtype=np.float64)
    ok = np.array([[accepts(key[3], m) for m in models] for key, _ in kept], dtype=np.bool_).reshape(len(kept), len(models))
    return Typical(
        cpu=np.array([k[0] for k, _ in kept], dtype=np.int64),
        milli=np.array([k[1] for k, _ in kept], dtype=np.int64),
        gpus=np.array([k[2] for k, _ in kept], dtype=np.int64),
        share=share,
        model_ok=ok,
    )


def fragmentation(cpu: IntArray, left: IntArray, model: IntArray, typical: Typical) -> FloatArray:
    """Fragmentation (GPU milli) of K node states: `cpu` (K), `left` (K x G, -1 where a node has no such GPU), `model` (K).

    For each typical pod: all idle milli counts as fragment unless the pod fits the node (model, enough GPUs with
    room, CPU) — then only the milli on GPUs too small for it (Q2 part of Q3) does.
    """
    valid = left >= 0
    idle = np.where(valid, left, 0)
    total = idle.sum(axis=1).astype(np.float64)  # K
    m = typical.milli[None, :, None]  # 1 x T x 1
    room = left[:, None, :] >= m  # K x T x G
    fits = room.sum(axis=2) >= typical.gpus[None, :]  # K x T
    cpu_fits = cpu[:, None] >= typical.cpu[None, :]
    gpu_pod = (typical.milli > 0)[None, :]
    usable = gpu_pod & typical.model_ok[:, model].T & fits & cpu_fits  # K x T
    small = np.where(valid[:, None, :] & ~room, idle[:, None, :], 0).sum(axis=2).astype(np.float64)  # K x T
    per_pod = np.where(usable, small, total[:, None])
    return np.asarray(per_pod @ typical.share, dtype=np.float64)


def fgd_scores(before: FloatArray, after: FloatArray) -> IntArray:
    """plugin/fgd_score.go: int64(sigmoid((before - after) / 1000) * 100)."""
    return np.asarray((100.0 / (1.0 + np.exp(-(before - after) / 1000.0))).astype(np.int64), dtype=np.int64)


def best_fit_scores(cpu_left: IntArray, gpu_left: IntArray, pod: PodShape, max_cpu: int, max_gpu_milli: int) -> IntArray:
    """plugin/best_fit_score.go getBestFitScore over nodes (after placing the pod); int64() truncates toward zero."""
    s = 0.5 * (cpu_left - pod.cpu) / max_cpu + 0.5 * (gpu_left - pod.total_milli) / max_gpu_milli
    return np.asarray(np.trunc((1.0 - s) * 100.0).astype(np.int64), dtype=np.int64)


def exclusive_gpus(left: IntArray, gpus: int) -> list[int]:
    """AllocateExclusiveGpuId: the lowest-index wholly free GPUs."""
    return [int(i) for i in np.flatnonzero(left == WHOLE)[:gpus]]


def best_fit_gpu(left: IntArray, milli: int) -> int:
    """allocateGpuIdBasedOnBestFit: the GPU with the least room that fits (strict <: the lowest index on ties)."""
    room = np.where(left >= milli, left, np.iinfo(np.int64).max)
    return int(np.argmin(room))
