"""The program model: the op graph, a plan seen as a graph, method metadata, the host
Tensor and the buffers behind it, element types and float packing. No GPU, no file bytes."""
