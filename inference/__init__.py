"""Model runtimes and the machine: embedder, chat model, hardware, memory plan, model registry.

Importing this package turns off the telemetry of the runtimes it wraps, before any of them loads:
ONNX Runtime's Linux build resolves and contacts a Microsoft collector unless ORT_DISABLE_TELEMETRY is
set (its disable_telemetry_events() call does not stop it), and Hearth must never touch the network.
"""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
