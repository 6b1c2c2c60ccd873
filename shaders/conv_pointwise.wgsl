// A 1x1 convolution's activation [Cin, HW] (rows x cols) transposed into [HW, Cin], the
// K-contiguous operand the matmul family reads (ops/conv.py _pointwise). One output
// element per invocation; the writes are contiguous.

override wg_size: u32 = 256;

fn transpose_item(i: u32) {
  let col = i / params.rows;
  let row = i % params.rows;
  xt[i] = x[row * params.cols + col];
}
