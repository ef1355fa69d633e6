# GPU node golden image: an Ubuntu 22.04/24.04 or RHEL 9 base AMI + golden_image.yml (driver, toolkits,
# MIG, DCGM, Fabric Manager from NVIDIA's repository for that OS), then the clean-up and the image
# manifest. For an EKS pool (`nodePools[].image` in a stack) the base must be an EKS image, with a
# kubelet and /etc/eks/bootstrap.sh (Canonical's `ubuntu-eks/k8s_<minor>/images/...`, owner
# 099720109477): the gate refuses an image whose manifest shows no bootstrap or another kubelet minor. Versions come from the lockfile, never from here. Debian 12 is not offered: its archive
# has no R580 driver (the lockfile's package_availability.debian12), so the build would stop at
# the driver role's preflight. RHEL 8 is not offered: it boots cgroup v1, which the pinned kubelet
# refuses (compatibility.kubelet in the lockfile), so its nodes would never turn Ready.
#
#   packer init ansible/packer                  (once: the plugins plugins.pkr.hcl requires)
#   packer build -var region=eu-west-1 -var base_os=ubuntu2204 -var base_ami_id=ami-... ansible/packer
#   packer validate -var base_os=ubuntu2404 -var base_ami_id=ami-0123456789abcdef0 ansible/packer/gpu-node.pkr.hcl   (offline; lint.sh)

variable "region" {
  type        = string
  default     = "us-east-1"
  description = "Region the AMI is built and registered in."
}

variable "instance_type" {
  type        = string
  default     = "g5.xlarge"
  description = "Build instance; a GPU instance, so DKMS builds against the image's own kernel."
}

variable "base_os" {
  type        = string
  description = "OS of base_ami_id, as the lockfile's package_availability names it; the build's first task checks the instance really runs it."

  # The lockfile's node OSes: package_availability keys that publish the pinned driver branch and
  # CUDA and boot cgroup v2 (gpu_platform.versions.node_oses; test_packer.py and the
  # ansible-node-os-cgroup-v2 rule keep this list equal to it).
  validation {
    condition     = contains(["ubuntu2204", "ubuntu2404", "rhel9"], var.base_os)
    error_message = "The base_os value must be one of ubuntu2204, ubuntu2404, rhel9 (the OS of base_ami_id)."
  }
}

variable "base_ami_id" {
  type        = string
  description = "Base AMI (ami-...) in var.region running var.base_os, chosen and recorded per build so a rebuild is reproducible; no default, nothing floats."

  # Packer 1.6's validation context has no regex functions; this spells out ^ami-([0-9a-f]{8}|[0-9a-f]{17})$.
  validation {
    condition     = substr(var.base_ami_id, 0, 4) == "ami-" && contains([12, 21], length(var.base_ami_id)) && trim(substr(var.base_ami_id, 4, -1), "0123456789abcdef") == ""
    error_message = "The base_ami_id value must be an AMI id: ami- followed by 8 or 17 lowercase hex digits (Ubuntu: aws ec2 describe-images --owners 099720109477 --filters Name=name,Values=ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*; RHEL: --owners 309956199498 --filters Name=name,Values=RHEL-9.*_HVM-*-x86_64-*)."
  }
}

# Packer's main.go sets PACKER_RUN_UUID for the run, and its manifest post-processor records it with
# the AMI; the image manifest records it too, which is how the gate ties the two files together.
variable "packer_run_uuid" {
  type        = string
  default     = env("PACKER_RUN_UUID")
  description = "Set by Packer for each run; not meant to be given."
}

# Packer 1.6 locals cannot refer to each other, so the lockfile is read once and used in place.
locals {
  versions  = yamldecode(file("${path.root}/../../infra/gpu_platform/data/versions.yaml"))
  timestamp = formatdate("YYYYMMDDhhmmss", timestamp())
  # The login each vendor's AMIs create for the key pair (Canonical: ubuntu; Red Hat: ec2-user).
  ssh_username = lookup({ ubuntu2204 = "ubuntu", ubuntu2404 = "ubuntu", rhel9 = "ec2-user" }, var.base_os, "")
}

source "amazon-ebs" "gpu_node" {
  region        = var.region
  instance_type = var.instance_type
  ssh_username  = local.ssh_username
  ami_name      = "gpu-platform-node-${var.base_os}-driver-${local.versions.nvidia_driver.version}-${local.timestamp}"
  source_ami    = var.base_ami_id

  # Grows the root volume: Canonical's and Red Hat's AMIs name their root device /dev/sda1 (a
  # different name would attach a second, empty volume and leave the root at 8-10 GiB).
  launch_block_device_mappings {
    device_name           = "/dev/sda1"
    volume_size           = 60
    volume_type           = "gp3"
    throughput            = 125
    iops                  = 3000
    delete_on_termination = true
  }

  tags = {
    Name                    = "gpu-platform-node"
    "gpu-platform/base-ami" = var.base_ami_id
    "gpu-platform/base-os"  = var.base_os
    "gpu-platform/driver"   = local.versions.nvidia_driver.version
    "gpu-platform/cuda"     = local.versions.cuda.version
    "gpu-platform/toolkit"  = local.versions.container_toolkit.version
    "gpu-platform/dcgm"     = local.versions.dcgm.version
    "gpu-platform/manifest" = "image-manifest.json"
  }
}

build {
  sources = ["source.amazon-ebs.gpu_node"]

  # Cloud images run cloud-init (and on Ubuntu unattended-upgrades) at first boot; the roles' apt
  # and dnf calls would race them for the package manager's lock.
  # cloud-init >= 23.4 (RHEL 9, Ubuntu 24.04) exits 2 when it finished with recoverable errors
  # ("status: done" with warnings): done all the same.
  provisioner "shell" {
    inline           = ["cloud-init status --wait"]
    valid_exit_codes = [0, 2]
  }

  provisioner "ansible" {
    playbook_file = "${path.root}/../golden_image.yml"
    groups        = ["golden_image"]
    user          = local.ssh_username
    ansible_env_vars = [
      "ANSIBLE_CONFIG=${path.root}/../ansible.cfg",
      "ANSIBLE_ROLES_PATH=${path.root}/../roles",
      "ANSIBLE_LOOKUP_PLUGINS=${path.root}/../plugins/lookup",
      # Every build is a new instance under the same inventory name: never reuse cached facts.
      "ANSIBLE_CACHE_PLUGIN=ansible.builtin.memory",
    ]
    # golden_image.yml refuses to build when the instance does not run base_os.
    extra_arguments = ["--become", "--extra-vars", "image_manifest_os=${var.base_os} image_manifest_packer_run_uuid=${var.packer_run_uuid}"]
  }

  post-processor "manifest" {
    output     = "${path.root}/manifests/packer-manifest.json"
    strip_path = true
  }
}
