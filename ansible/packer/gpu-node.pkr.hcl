# GPU node golden image: Debian 12 + golden_image.yml (driver, toolkits, MIG, DCGM, Fabric Manager),
# then the clean-up and the image manifest. Versions come from the lockfile, never from here.
#
#   packer validate -var base_ami_id=ami-0123456789abcdef0 ansible/packer/gpu-node.pkr.hcl   (offline; lint.sh)
#   packer build -var region=eu-west-1 -var base_ami_id=ami-... ansible/packer/gpu-node.pkr.hcl

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

variable "base_ami_id" {
  type        = string
  description = "Debian 12 base AMI (ami-...) in var.region, chosen and recorded per build so a rebuild is reproducible; no default, nothing floats."

  # Packer 1.6's validation context has no regex functions; this spells out ^ami-([0-9a-f]{8}|[0-9a-f]{17})$.
  validation {
    condition     = substr(var.base_ami_id, 0, 4) == "ami-" && contains([12, 21], length(var.base_ami_id)) && trim(substr(var.base_ami_id, 4, -1), "0123456789abcdef") == ""
    error_message = "The base_ami_id value must be an AMI id: ami- followed by 8 or 17 lowercase hex digits (aws ec2 describe-images --owners 136693071363 --filters Name=name,Values=debian-12-amd64-*)."
  }
}

# Packer 1.6 locals cannot refer to each other, so the lockfile is read once and used in place.
locals {
  versions  = yamldecode(file("${path.root}/../../infra/gpu_platform/data/versions.yaml"))
  timestamp = formatdate("YYYYMMDDhhmmss", timestamp())
}

source "amazon-ebs" "gpu_node" {
  region        = var.region
  instance_type = var.instance_type
  ssh_username  = "admin"
  ami_name      = "gpu-platform-node-driver-${local.versions.nvidia_driver.version}-${local.timestamp}"
  source_ami    = var.base_ami_id

  launch_block_device_mappings {
    device_name           = "/dev/xvda"
    volume_size           = 60
    volume_type           = "gp3"
    throughput            = 125
    iops                  = 3000
    delete_on_termination = true
  }

  tags = {
    Name                    = "gpu-platform-node"
    "gpu-platform/base-ami" = var.base_ami_id
    "gpu-platform/driver"   = local.versions.nvidia_driver.version
    "gpu-platform/cuda"     = local.versions.cuda.version
    "gpu-platform/toolkit"  = local.versions.container_toolkit.version
    "gpu-platform/dcgm"     = local.versions.dcgm.version
    "gpu-platform/manifest" = "image-manifest.json"
  }
}

build {
  sources = ["source.amazon-ebs.gpu_node"]

  provisioner "ansible" {
    playbook_file = "${path.root}/../golden_image.yml"
    groups        = ["golden_image"]
    user          = "admin"
    ansible_env_vars = [
      "ANSIBLE_CONFIG=${path.root}/../ansible.cfg",
      "ANSIBLE_ROLES_PATH=${path.root}/../roles",
      "ANSIBLE_LOOKUP_PLUGINS=${path.root}/../plugins/lookup",
      # Every build is a new instance under the same inventory name: never reuse cached facts.
      "ANSIBLE_CACHE_PLUGIN=ansible.builtin.memory",
    ]
    extra_arguments = ["--become"]
  }

  post-processor "manifest" {
    output     = "${path.root}/manifests/packer-manifest.json"
    strip_path = true
  }
}
