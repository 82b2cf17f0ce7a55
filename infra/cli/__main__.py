"""`python -m gpu_platform.infra.cli`: the same as the gpu-platform console script."""

from gpu_platform.infra.cli import run

if __name__ == "__main__":
    run()
