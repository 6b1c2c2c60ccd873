"""ResNet-18's conv2d shapes at 224x224, batch 1 (no imports: the export, torch and ours
all take them from here). Each: input channels, output channels, input height = width,
kernel, stride, padding; ResNet-18's convs have no bias (batch norm follows)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Conv:
    cin: int
    cout: int
    hw: int
    k: int
    stride: int
    pad: int

    @property
    def name(self) -> str:
        return f"{self.k}x{self.k}s{self.stride}-{self.cin}x{self.hw}-{self.cout}"

    @property
    def out_hw(self) -> int:
        return (self.hw + 2 * self.pad - self.k) // self.stride + 1

    @property
    def flops(self) -> float:
        return 2.0 * self.cout * self.out_hw ** 2 * self.cin * self.k * self.k

    @property
    def nbytes(self) -> int:
        """fp32 bytes read and written once: input, weight, output."""
        return 4 * (self.cin * self.hw ** 2 + self.cout * self.cin * self.k ** 2
                    + self.cout * self.out_hw ** 2)

    @property
    def kind(self) -> str:
        return f"{self.k}x{self.k} s{self.stride}"


RESNET18_CONVS = [
    Conv(3, 64, 224, 7, 2, 3),  # stem
    Conv(64, 64, 56, 3, 1, 1),
    Conv(128, 128, 28, 3, 1, 1),
    Conv(256, 256, 14, 3, 1, 1),
    Conv(512, 512, 7, 3, 1, 1),
    Conv(64, 128, 56, 3, 2, 1),  # first conv of stages 2-4
    Conv(128, 256, 28, 3, 2, 1),
    Conv(256, 512, 14, 3, 2, 1),
    Conv(64, 128, 56, 1, 2, 0),  # the 1x1 stride-2 downsamples
    Conv(128, 256, 28, 1, 2, 0),
    Conv(256, 512, 14, 1, 2, 0),
]


def parse_conv(text: str) -> Conv:
    """A shape by name (``3x3s1-64x56-64``: KxK, stride, cin x hw, cout); padding keeps
    the size at stride 1 ((k - 1) / 2)."""
    try:
        kernel, rest = text.split("s", 1)
        k, k2 = (int(v) for v in kernel.split("x"))
        stride, rest = rest.split("-", 1)
        cin_hw, cout = rest.rsplit("-", 1)
        cin, hw = (int(v) for v in cin_hw.split("x"))
        conv = Conv(cin, int(cout), hw, k, int(stride), (k - 1) // 2)
    except ValueError:
        raise ValueError(f"conv shape {text!r}: KxKsS-CINxHW-COUT, e.g. 3x3s1-64x56-64") from None
    if k != k2 or min(conv.cin, conv.cout, conv.hw, k, conv.stride) < 1 or conv.out_hw < 1:
        raise ValueError(f"conv shape {text!r}: square kernels, positive sizes, an output "
                         "of at least 1x1")
    return conv


def parse_convs(text: str | None) -> list[Conv]:
    """``--convs`` (names separated by commas; default: all of RESNET18_CONVS)."""
    if not text:
        return list(RESNET18_CONVS)
    return [parse_conv(part.strip()) for part in text.split(",") if part.strip()]
