"""WGSL compute shaders, one file per kernel family; shipped inside the wheel."""
