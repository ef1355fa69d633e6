"""Cases of the version rules: pins, drift from the lockfile, driver and GPU compatibility, support windows.

Kept apart so the version rules' cases read together; tests/policies/cases.py joins every module's cases into CASES.
"""

from __future__ import annotations

from datetime import date

from gpu_platform.versions import load_lockfile
from tests.policies.builders import DROP, NG, Case, add, at, compliant, drop, fires, lock_edit, privileged_deployment, silent
from tests.policies.golden import POOL, golden_repo, image_manifest, on_golden_image, packer_manifest

H200_ON_NG = at(NG, {"labels.gpu-platform.io/gpu-model": "H200-141GB"})


VERSION_CASES: list[Case] = [
    *compliant("charts-pinned", "prod"),
    fires(
        "charts-pinned",
        "chart-drift",
        at("gpu-operator-release", {"version": "v25.10.0"}),
        on="gpu-operator-release",
        says="chart 'gpu-operator' version 'v25.10.0' differs from the lockfile's charts.gpu-operator.version",
    ),
    fires("charts-pinned", "unpinned-chart", at("kueue-release", {"version": DROP}), on="kueue-release", says="chart 'kueue' has no version"),
    fires(
        "charts-pinned",
        "range-chart",
        at("kueue-release", {"version": "^0.19"}),
        on="kueue-release",
        says="chart 'kueue' version '^0.19' is not an exact version",
    ),
    *compliant("images-pinned", "prod"),
    fires(
        "images-pinned",
        "image-drift",
        at("autoscaler-release", {"values.image.tag": "v1.33.0"}),
        on="autoscaler-release",
        says="image registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0 differs from the lockfile's images.cluster-autoscaler.tag",
    ),
    fires(
        "images-pinned",
        "eks-registry-image-drift-in-the-stacks-region",
        at("efa-device-plugin-release", {"values.image.tag": "v0.5.19"}),
        on="efa-device-plugin-release",
        says="image 602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.19 differs from the lockfile's",
    ),
    fires(
        "images-pinned",
        "untagged-image",
        add(privileged_deployment("kube-system")),
        at("debug-kube-system", {"spec.template.spec.containers.0.image": "docker.io/library/busybox"}),
        on="debug-kube-system",
        says="spec.template.spec.containers[0].image: image docker.io/library/busybox has no tag or digest",
    ),
    *compliant("no-floating-versions", "prod"),
    fires(
        "no-floating-versions",
        "latest-driver",
        at("gpu-operator-release", {"values.driver.version": "latest"}),
        on="gpu-operator-release",
        says="values.driver.version is 'latest'",
    ),
    fires(
        "no-floating-versions",
        "latest-image",
        at("autoscaler-release", {"values.image.tag": "latest"}),
        on="autoscaler-release",
        says="values.image.tag is 'latest'",
    ),
    *compliant("eks-versions-match-lockfile", "prod"),
    fires(
        "eks-versions-match-lockfile",
        "ami-drift",
        at(NG, {"releaseVersion": "1.33.4-20250101"}),
        on=NG,
        says="releaseVersion '1.33.4-20250101' differs from the lockfile's",
    ),
    fires(
        "eks-versions-match-lockfile",
        "addon-drift",
        at("cluster-addon-coredns", {"addonVersion": "v1.11.0-eksbuild.1"}),
        on="cluster-addon-coredns",
        says="add-on coredns version 'v1.11.0-eksbuild.1' differs from the lockfile's",
    ),
    *compliant("driver-supports-gpu", "prod", "onprem"),
    fires(
        "driver-supports-gpu",
        "h200-on-535-ami",
        H200_ON_NG,
        on=NG,
        says="pool train-h100-reserved: H200-141GB needs driver branch >= 550, but eks.ami_driver_branch is 535",
        lock=lock_edit(eks__ami_driver_branch="535"),
    ),
    fires(
        "driver-supports-gpu",
        "stack-override-of-ami-branch",
        H200_ON_NG,
        on=NG,
        says="needs driver branch >= 550, but the stack's versions override of eks.ami_driver_branch is 535",
        stack_lock=lock_edit(eks__ami_driver_branch="535"),
    ),
    fires(
        "driver-supports-gpu",
        "override-cannot-relax-the-matrix",
        H200_ON_NG,
        on=NG,
        says="H200-141GB needs driver branch >= 550, but the stack's versions override of eks.ami_driver_branch is 535",
        stack_lock=lock_edit(
            eks__ami_driver_branch="535",
            compatibility__gpu_min_driver_branch={**load_lockfile().compatibility.gpu_min_driver_branch, "H200-141GB": "450"},
        ),
    ),
    *compliant("fabric-manager-matches-driver", "onprem"),
    fires(
        "fabric-manager-matches-driver",
        "fm-drift",
        on="pool-hgx-h100-train",
        says="pool hgx-h100-train (H100-80GB, NVSwitch): fabric manager '535.247.01' differs from driver",
        stack="onprem",
        lock=lock_edit(fabric_manager__version="535.247.01"),
    ),
    *compliant("versions-in-support", "prod"),
    fires(
        "versions-in-support",
        "eks-1.33-past-standard-support",
        at("cluster-eks", {"version": "1.33"}),
        on="cluster-eks",
        says="Kubernetes 1.33 left standard support on 2026-07-29",
    ),
    fires(
        "versions-in-support",
        "ami-driver-570-past-eol",
        on=NG,
        says="eks.ami_driver_branch) 570 left standard support on 2026-02-28",
        lock=lock_edit(eks__ami_driver_branch="570"),
    ),
    fires(
        "versions-in-support",
        "ami-release-without-support-entry",
        at(NG, {"releaseVersion": "1.35.6-20990101"}),
        on=NG,
        says="no end-of-support entry (support.eks_ami)",
    ),
    # Days fixed: EKS standard support of 1.35 ends 2027-03-27 (the advisory starts below 90 days, the failure below 30).
    silent("versions-support-ending", "a-quarter-and-more-ahead", today=date(2026, 12, 27)),
    fires(
        "versions-support-ending",
        "eighty-nine-days-left",
        on="cluster-eks",
        says="Kubernetes 1.35 leaves standard support on 2027-03-27, in 89 day(s)",
        today=date(2026, 12, 28),
    ),
    silent("versions-support-ending", "inside-the-mandatory-window-said-once", today=date(2027, 2, 26)),
    fires(
        "versions-in-support",
        "twenty-nine-days-left",
        on="cluster-eks",
        says="Kubernetes 1.35 leaves standard support on 2027-03-27, in 29 day(s)",
        today=date(2027, 2, 26),
    ),
    *compliant("efa-device-plugin", "prod"),
    silent("efa-device-plugin", "no-efa-pool-no-plugin-needed", stack="dev"),
    fires("efa-device-plugin", "efa-pool-without-plugin", drop("efa-device-plugin-release"), on=NG, says="no aws-efa-k8s-device-plugin release"),
    fires(
        "efa-device-plugin",
        "plugin-not-tolerating-gpu-taint",
        at("efa-device-plugin-release", {"values.tolerations": []}),
        on=NG,
        says="does not tolerate the pool's taint nvidia.com/gpu=present:NoSchedule",
    ),
    fires(
        "efa-device-plugin",
        "plugin-selecting-other-nodes",
        at("efa-device-plugin-release", {"values.nodeSelector": {"gpu-platform.io/pool": "infer-l4-spot"}}),
        on="pool-train-h100-ondemand-ng",
        says="nodeSelector gpu-platform.io/pool does not match",
    ),
    *compliant("kueue-admits-efa", "prod"),
    fires(
        "kueue-admits-efa",
        "efa-not-excluded",
        at("kueue-release", {"values.managerConfig.controllerManagerConfigYaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"}),
        on="kueue-release",
        says="vpc.amazonaws.com/efa, which no ClusterQueue covers",
    ),
    # A golden image as a pool's AMI (nodePools[].image): the program's own node group and launch template for it.
    silent("golden-image-matches-lockfile", "dev-golden-image-built-here", on_golden_image, stack="dev", repo=golden_repo()),
    silent("golden-image-matches-lockfile", "prod-runs-the-eks-ami", idle="no EKS node group runs a golden image"),
    fires(
        "golden-image-matches-lockfile",
        "golden-image-with-another-driver",
        on_golden_image,
        stack="dev",
        repo=golden_repo(image_manifest(pinned={"nvidia_driver": {"version": "570.195.03"}})),
        on=f"pool-{POOL}-ng",
        says="built with driver 570.195.03",
        key="gpu-platform:nodePools[0]",
    ),
    fires(
        "golden-image-matches-lockfile",
        "golden-image-without-eks-bootstrap",
        on_golden_image,
        stack="dev",
        repo=golden_repo(image_manifest(eks={"bootstrap": False, "kubelet": ""})),
        on=f"pool-{POOL}-ng",
        says="no /etc/eks/bootstrap.sh",
    ),
    fires(
        "golden-image-matches-lockfile",
        "golden-image-ami-not-this-build",
        on_golden_image,
        stack="dev",
        repo=golden_repo(packer=packer_manifest(run="a-later-build")),
        on=f"pool-{POOL}-ng",
        says="the image manifest is from Packer run",
    ),
    fires(
        "eks-versions-match-lockfile",
        "golden-image-node-group-keeps-release-version",
        on_golden_image,
        at(f"pool-{POOL}-ng", {"releaseVersion": load_lockfile().eks.ami_release_version}),
        stack="dev",
        on=f"pool-{POOL}-ng",
        says="EKS fails the deployment beside a custom AMI",
    ),
]
