// out[i] = start + i * step in the stored type (`word`: elem for floats, i32 for ints,
// u32 for bools): full / full_like / scalar_tensor (step 0) and arange.
override wg_size: u32 = 256;

fn fill_item(i: u32) {
  out[i] = value_at(i);
}
