"""The entry point Pulumi runs for the source-based package (PulumiPlugin.yaml): it serves the
exposed components (gpu_platform.components.provider.provider) to the engine over gRPC."""

from gpu_platform.components.provider.provider import main

if __name__ == "__main__":
    main()
