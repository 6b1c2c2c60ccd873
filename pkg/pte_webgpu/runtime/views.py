"""The reshape ops that fusion looks through and build.py binds as aliases of their input
(one list, read by fusion.py and fusion_q4.py without importing each other)."""

VIEWS = ("aten.view_copy.default", "aten.squeeze_copy.dims", "aten.unsqueeze_copy.default")
