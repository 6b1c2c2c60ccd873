"""Every input form Method.execute meets, as a table: (id, make, expect).

``make(ref)`` turns the reference values (a float32 [2, 3, 4] array for FLOAT_CASES, an
int64 [2, 5] array of token ids for INT_CASES) into one input form; ``expect`` is "ok"
(the input must read as exactly ``ref``) or a regex the InputError must match. The
unit tests read each case on the host; the native tests run each through a real
exported program (add_2x3x4, embedding_100x16_2x5). PURE_CASES are the numpy-free
ones, as Python source for the browser (``ref`` is a flat list there).
"""

from array import array

import numpy as np
from pte_webgpu import Tensor

SHAPE = (2, 3, 4)


def _strided(ref, dtype=np.float32):
    """ref's values every other item of a bigger array: a non-contiguous view."""
    big = np.zeros(SHAPE[:-1] + (2 * SHAPE[-1],), dtype)
    big[..., ::2] = ref
    return big[..., ::2]


def _interleaved_view(ref):
    """A non-contiguous memoryview (stride 8) of array('f') holding ref's values."""
    flat = array("f", [0.0] * (2 * ref.size))
    flat[::2] = array("f", ref.reshape(-1).tolist())
    return memoryview(flat)[::2]


class _ArrayLike:
    """Something numpy can read (as torch tensors are), but not an ndarray."""

    def __init__(self, values):
        self.values = values

    def __array__(self, dtype=None, copy=None):
        return self.values


class _Unreadable:
    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("cannot hand out my data")


def _masked(ref, mask_one):
    mask = np.zeros(ref.shape, bool)
    mask[0, 1, 2] = mask_one
    return np.ma.array(ref, mask=mask)


FLOAT_CASES = [
    # numpy: byte order, strides, 0-copy views, subclasses
    ("numpy", lambda r: r, "ok"),
    ("numpy_big_endian", lambda r: r.astype(">f4"), "ok"),
    ("numpy_fortran_order", lambda r: np.asfortranarray(r), "ok"),
    ("numpy_strided", _strided, "ok"),
    ("numpy_big_endian_strided", lambda r: _strided(r, ">f4"), "ok"),
    ("numpy_negative_strides", lambda r: r[::-1, ::-1, ::-1].copy()[::-1, ::-1, ::-1], "ok"),
    ("numpy_transposed_view", lambda r: np.ascontiguousarray(r.transpose(2, 1, 0)).transpose(2, 1, 0),
     "ok"),
    ("masked_nothing_masked", lambda r: _masked(r, False), "ok"),
    ("masked_one_masked", lambda r: _masked(r, True), r"input 0: a masked array with 1 masked"),
    ("array_like", lambda r: _ArrayLike(r), "ok"),
    ("array_like_raises", lambda r: _Unreadable(), r"input 0: could not read .*_Unreadable.* "
                                                   r"cannot hand out my data"),
    ("numpy_float64", lambda r: r.astype(np.float64), r"input 0: expected dtype float32, got "
                                                      r"float64"),
    ("numpy_complex", lambda r: r.astype(np.complex64), r"input 0: numpy dtype complex64 is not "
                                                        r"supported"),
    ("numpy_structured", lambda r: np.zeros(SHAPE, [("a", "<f4")]), r"input 0: numpy dtype .* is "
                                                                    r"not supported"),
    ("numpy_object", lambda r: r.astype(object), r"input 0: numpy dtype object is not supported"),
    ("numpy_wrong_shape", lambda r: r.reshape(6, 4), r"input 0: expected shape \[2, 3, 4\], got "
                                                     r"\[6, 4\]"),
    # pte_webgpu.Tensor
    ("tensor", lambda r: Tensor(r.tobytes(), SHAPE), "ok"),
    ("tensor_big_endian", lambda r: Tensor(r.astype(">f4").tobytes(), SHAPE, ">f4"), "ok"),
    ("tensor_from_strided_view", lambda r: Tensor(_interleaved_view(r), SHAPE), "ok"),
    # (buffer, shape[, dtype]) tuples
    ("bytes", lambda r: (r.tobytes(), SHAPE), "ok"),
    ("bytearray", lambda r: (bytearray(r.tobytes()), SHAPE), "ok"),
    ("memoryview_bytes", lambda r: (memoryview(r.tobytes()), list(SHAPE)), "ok"),
    ("array_f", lambda r: (array("f", r.reshape(-1).tolist()), SHAPE), "ok"),
    ("array_f_dtype", lambda r: (array("f", r.reshape(-1).tolist()), SHAPE, "float32"), "ok"),
    ("bytes_big_endian_dtype", lambda r: (r.astype(">f4").tobytes(), SHAPE, ">f4"), "ok"),
    ("bytes_numpy_dtype", lambda r: (r.astype(">f4").tobytes(), SHAPE, np.dtype(">f4")), "ok"),
    ("bytes_numpy_type", lambda r: (r.tobytes(), SHAPE, np.float32), "ok"),
    ("memoryview_big_endian", lambda r: (memoryview(r.astype(">f4")), SHAPE), "ok"),
    ("memoryview_strided", lambda r: (_interleaved_view(r), SHAPE), "ok"),
    ("memoryview_fortran", lambda r: (memoryview(np.asfortranarray(r)), SHAPE), "ok"),
    ("numpy_in_tuple_big_endian_strided", lambda r: (_strided(r, ">f4"), SHAPE), "ok"),
    ("numpy_in_tuple_wrong_shape", lambda r: (r, (24,)), r"input 0: expected shape \[2, 3, 4\], "
                                                         r"got \[24\]"),
    ("masked_in_tuple", lambda r: (_masked(r, True), SHAPE), r"input 0: a masked array"),
    ("list_in_tuple", lambda r: (r.reshape(-1).tolist(), SHAPE), "ok"),
    ("nested_list", lambda r: r.tolist(), "ok"),
    ("shape_with_a_string", lambda r: (r.tobytes(), ("a", 2)), r"input 0: shape \('a', 2\) has "
                                                               r"a dimension 'a' that is not an int"),
    ("shape_negative", lambda r: (r.tobytes(), (-2, 3, 4)), r"input 0: shape .* has a negative "
                                                            r"dimension -2"),
    ("shape_an_int", lambda r: (r.tobytes(), 24), r"input 0: shape should be a tuple of ints, "
                                                  r"got a int"),
    ("shape_float_dim", lambda r: (r.tobytes(), (2.0, 3, 4)), r"dimension 2.0 that is not an int"),
    ("dtype_complex64", lambda r: (r.tobytes(), SHAPE, "complex64"),
     r"input 0: dtype 'complex64' is not supported; use one of .*float32"),
    ("dtype_numpy_complex", lambda r: (r.tobytes(), SHAPE, np.complex64),
     r"input 0: dtype .*complex64.* is not supported"),
    ("dtype_not_a_dtype", lambda r: (r.tobytes(), SHAPE, 3.5), r"input 0: dtype 3.5 is not "
                                                               r"supported"),
    ("bytes_too_short", lambda r: (r.tobytes()[:-4], SHAPE), r"input 0: a float32 tensor of "
                                                             r"shape \[2, 3, 4\] needs 96 bytes, "
                                                             r"the buffer has 92"),
    ("typed_buffer_other_dtype", lambda r: (array("d", r.reshape(-1).tolist()), SHAPE, "float32"),
     r"input 0: the buffer holds float64 items \(format 'd'\) but the dtype given is float32"),
    ("typed_buffer_float64", lambda r: (array("d", r.reshape(-1).tolist()), SHAPE),
     r"input 0: expected dtype float32, got float64"),
    ("no_buffer_protocol", lambda r: (object(), SHAPE), r"input 0: the buffer is a object, which "
                                                        r"has no buffer protocol"),
    ("list_buffer_with_a_string", lambda r: ([1.0] * 23 + ["x"], SHAPE),
     r"input 0: value 'x' at flat position 23 is not a number"),
    ("list_buffer_too_short", lambda r: ([1.0] * 23, SHAPE), r"input 0: the list has 23 values, "
                                                             r"shape \[2, 3, 4\] needs 24"),
    ("ragged_list", lambda r: [[1.0, 2.0], [3.0]], r"input 0: the nested list is ragged"),
    ("tuple_of_four", lambda r: (r.tobytes(), SHAPE, "float32", 1),
     r"input 0: a tuple input is \(buffer, shape\) or \(buffer, shape, dtype\), got a tuple of 4"),
    ("none", lambda r: None, r"input 0 is None; expected a numpy array"),
    ("string", lambda r: "1.0", r"input 0: expected a numpy array.*; got a str"),
    ("dict", lambda r: {"x": r}, r"input 0: expected a numpy array.*; got a dict"),
    ("bytes_alone", lambda r: r.tobytes(), r"input 0: expected a numpy array.*; got a bytes"),
]

# The other input of add_2x3x4 (ones) is a plain numpy array in every case.

INT_CASES = [
    ("numpy", lambda r: r, "ok"),
    ("numpy_big_endian", lambda r: r.astype(">i8"), "ok"),
    ("numpy_strided", lambda r: np.repeat(r, 2, axis=1)[:, ::2], "ok"),
    ("bytes_big_endian_dtype", lambda r: (r.astype(">i8").tobytes(), r.shape, ">i8"), "ok"),
    ("memoryview_big_endian", lambda r: (memoryview(r.astype(">i8")), r.shape), "ok"),
    ("array_q", lambda r: (array("q", r.reshape(-1).tolist()), r.shape), "ok"),
    ("nested_list", lambda r: r.tolist(), "ok"),
    ("list_with_a_fraction", lambda r: [[1.5] * 5, [0] * 5],
     r"input 0: value 1.5 at flat position 0 is not an integer \(int64 input\)"),
    ("list_beyond_int64", lambda r: [[2 ** 70] * 5, [0] * 5],
     r"input 0: value 1180591620717411303424 at flat position 0 does not fit int64"),
    ("list_beyond_int32", lambda r: [[2 ** 40] * 5, [0] * 5],
     r"input 0: int64 value 1099511627776 is outside int32's range"),
    ("numpy_int32", lambda r: r.astype(np.int32), r"input 0: expected dtype int64, got int32"),
    ("numpy_float", lambda r: r.astype(np.float32), r"input 0: expected dtype int64, got float32"),
]

CONTAINER_CASES = [
    ("none", lambda r: None, r"method 'forward' takes its 2 inputs as a list or tuple, got None"),
    ("ndarray", lambda r: np.stack([r, r]), r"takes its 2 inputs as a list or tuple, got a "
                                            r"numpy.ndarray"),
    ("one_input", lambda r: [r], r"method 'forward' takes 2 inputs, got 1"),
    ("generator", lambda r: (x for x in [r, r]), r"as a list or tuple, got a generator"),
]

# Numpy-free forms for the browser (Pyodide without numpy), as Python expressions over
# `ref` (a flat list of 24 float32 values) and the module `struct`/`array`/`Tensor`.
PURE_CASES = [
    ("bytes", "(struct.pack('<24f', *ref), (2, 3, 4))", "ok"),
    ("bytes_big_endian_dtype", "(struct.pack('>24f', *ref), (2, 3, 4), '>f4')", "ok"),
    ("tensor_big_endian", "Tensor(struct.pack('>24f', *ref), (2, 3, 4), '>f4')", "ok"),
    ("array_f", "(array.array('f', ref), (2, 3, 4))", "ok"),
    ("memoryview_strided", "(memoryview(array.array('f', [v for x in ref for v in (x, 0.0)]))"
                           "[::2], (2, 3, 4))", "ok"),
    ("nested_list", "[[ref[12 * i + 4 * j:12 * i + 4 * j + 4] for j in range(3)] "
                    "for i in range(2)]", "ok"),
    ("list_in_tuple", "(list(ref), [2, 3, 4])", "ok"),
    ("shape_with_a_string", "(struct.pack('<24f', *ref), ('a', 2))",
     r"input 0: shape \('a', 2\) has a dimension 'a' that is not an int"),
    ("dtype_complex64", "(struct.pack('<24f', *ref), (2, 3, 4), 'complex64')",
     r"input 0: dtype 'complex64' is not supported"),
    ("list_buffer_with_a_string", "(list(ref[:23]) + ['x'], (2, 3, 4))",
     r"input 0: value 'x' at flat position 23 is not a number"),
    ("typed_buffer_other_dtype", "(array.array('d', ref), (2, 3, 4), 'float32')",
     r"input 0: the buffer holds float64 items"),
    ("none", "None", r"input 0 is None"),
]
