// out[..., idx[q], ...] = values[...] for every element of the indexed shape (the dims
// before the indexed one, the index tensor's dims, the dims after it): `q` walks the index
// tensor, `dst_strides` the other dims of out, `val_strides` the (broadcast) values. A
// negative index counts from the end; one outside the dim writes nothing (torch raises).
override wg_size: u32 = 256;

fn put_item(i: u32) {
  var rest = i;
  var d_at = 0u;
  var v_at = 0u;
  var q = 0u;
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.shape, d - 1u);
    let c = rest % size;
    rest = rest / size;
    d_at += c * at(params.dst_strides, d - 1u);
    v_at += c * at(params.val_strides, d - 1u);
    q += c * at(params.idx_strides, d - 1u);
  }
  var row = idx[q];
  if (row < 0) {
    row += i32(params.dim_size);
  }
  if (row < 0 || u32(row) >= params.dim_size) {
    return;
  }
  dst[d_at + u32(row) * params.dim_stride] = vals[v_at];
}
