"""The gpu-platform Pulumi program, its stack config model and the operator CLI."""
