"""The torch modules the vision bench times (host only: torch). One place for all sides:
the export (bench/vision_export.py: .pte and ONNX) and torch on CUDA (bench/vision_torch.py)
build the same module with the same seeded weights from a name and a size.

    build(name, size) -> (module in eval mode, input shape)

``size`` is "ci" (the small-width variant of the same graph) or "full" (224x224). The
issue-19 models (mobilenet_v2, resnet18, ...) come from tests/fixtures/vision/models.py
(``build(name, full=...)``; $PTE_WEBGPU_VISION_MODELS names another such file); two
stand-ins of this file serve the bench's own tests with ops the runtime has had from the
start:

    tiny_mlp      flatten -> linear -> hardswish -> linear: an image in, class scores out
    tiny_convnet  conv 3x3 s2 -> relu -> conv 3x3 -> global mean -> linear
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VISION = REPO / "tests" / "fixtures" / "vision"
SIZES = ("ci", "full")


def _torch():
    import torch  # host only

    return torch


def _stand_ins():
    torch = _torch()
    nn = torch.nn

    class TinyMLP(nn.Module):
        def __init__(self, c, hw, hidden=32, classes=10):
            super().__init__()
            self.fc1 = nn.Linear(c * hw * hw, hidden)
            self.fc2 = nn.Linear(hidden, classes)

        def forward(self, x):
            return self.fc2(nn.functional.hardswish(self.fc1(x.flatten(1))))

    class TinyConvNet(nn.Module):
        def __init__(self, width=8, classes=10):
            super().__init__()
            self.c1 = nn.Conv2d(3, width, 3, 2, 1)
            self.c2 = nn.Conv2d(width, 2 * width, 3, 1, 1)
            self.fc = nn.Linear(2 * width, classes)

        def forward(self, x):
            x = torch.relu(self.c2(torch.relu(self.c1(x))))
            return self.fc(x.mean(dim=(2, 3)))

    return {"tiny_mlp": (lambda full: TinyMLP(3, 32 if full else 8, 64 if full else 32),
                         lambda full: [1, 3, 32, 32] if full else [1, 3, 8, 8]),
            "tiny_convnet": (lambda full: TinyConvNet(32 if full else 8),
                             lambda full: [1, 3, 224, 224] if full else [1, 3, 16, 16])}


STAND_INS = ("tiny_mlp", "tiny_convnet")


def _seeded(module, seed: int = 0):
    """Stand-ins' weights: normal / sqrt(fan-in), biases 0.1 * normal, from one generator."""
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 1
            scale = fan_in ** -0.5 if p.dim() > 1 else 0.1
            p.copy_(torch.randn(p.shape, generator=g) * scale)
    return module.eval()


def zoo():
    """tests/fixtures/vision/models.py as a module (the issue-19 models), or None when this
    checkout has none yet."""
    path = Path(os.environ.get("PTE_WEBGPU_VISION_MODELS") or VISION / "models.py")
    if not path.is_file():
        return None
    if "vision_zoo" not in sys.modules:
        spec = importlib.util.spec_from_file_location("vision_zoo", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["vision_zoo"] = module
        spec.loader.exec_module(module)
    return sys.modules["vision_zoo"]


def names() -> list[str]:
    models = zoo()
    return list(STAND_INS) + (sorted(models.MODELS) if models else [])


def build(name: str, size: str = "full"):
    """(seeded module in eval mode, input shape as a list) of model ``name`` at ``size``."""
    if size not in SIZES:
        raise ValueError(f"size {size!r}: one of {', '.join(SIZES)}")
    full = size == "full"
    if name in STAND_INS:
        make, shape = _stand_ins()[name]
        return _seeded(make(full)), shape(full)
    models = zoo()
    if models is None or name not in models.MODELS:
        raise ValueError(f"unknown model {name!r}: one of {', '.join(names())}")
    module, shape = models.build(name, full=full)
    return module.eval(), list(shape)
