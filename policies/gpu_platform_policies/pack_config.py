"""Print a stack's policy levels and thresholds as a CrossGuard `--policy-pack-config` file.

python -m gpu_platform_policies.pack_config stacks/Pulumi.prod.yaml > policy-config.json
pulumi preview --stack prod --policy-pack policies/pack --policy-pack-config policy-config.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from gpu_platform.errors import ConfigError
from gpu_platform.spec.loader import load_stack_file
from gpu_platform_policies.crossguard import pack_config


def main(argv: Sequence[str] | None = None) -> int:
    """Write the pack config of the stack file given as the only argument; 2 on bad input."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m gpu_platform_policies.pack_config stacks/Pulumi.<stack>.yaml", file=sys.stderr)
        return 2
    try:
        spec = load_stack_file(Path(args[0]))
    except ConfigError as err:
        for problem in err.problems:
            print(problem, file=sys.stderr)
        return 2
    print(json.dumps(pack_config(spec), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
