"""GPU and machine facts of both clouds as data: GCP machine shapes and accelerators, AWS GPU instance types, and which zones offer what."""
