// out[..., idx[q], ...] = values[...] for every element of the indexed shape (the dims
// before the indexed one, the index tensor's dims, the dims after it): `q` walks the index
// tensor, `dst_strides` the other dims of out, `val_strides` the (broadcast) values. A
// negative index counts from the end; one outside the dim writes nothing (torch raises).
override wg_size: u32 = 256;

fn put_item(i: u32) {
  var row = idx[strided_offset(i, params.idx_strides)];
  if (row < 0) {
    row += i32(params.dim_size);
  }
  if (row < 0 || u32(row) >= params.dim_size) {
    return;
  }
  let d_at = strided_offset(i, params.dst_strides) + u32(row) * params.dim_stride;
  dst[d_at] = vals[strided_offset(i, params.val_strides)];
}
