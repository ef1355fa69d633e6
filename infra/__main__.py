"""`pulumi up` entry point: read the stack config, build the platform, export."""

from gpu_platform.program import main

main()
