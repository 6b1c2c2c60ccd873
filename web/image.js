// A picture as an image model's input: decoded by the browser, then cropped, resized,
// normalized and laid out as NCHW float32 here, in one place. Everything but
// decodePicture is plain arithmetic (tests/unit/test_image_input.py runs it in Node and
// compares it with numpy).

export const RULE = "The picture's centre is cropped to the model's aspect ratio, resized to its " +
  "W × H (bilinear, antialiased when shrinking, as torchvision's Resize), scaled to [0, 1] and " +
  "normalized per channel as (x − mean) / std; a one-channel model gets the luma " +
  "0.299 R + 0.587 G + 0.114 B.";
export const LUMA = [0.299, 0.587, 0.114];

/** ImageNet's mean and std; for one channel, their averages (as timm does). */
export function defaultNormalization(channels) {
  const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];
  if (channels === 3) return { mean, std };
  const average = (v) => Number((v.reduce((a, b) => a + b) / v.length).toFixed(3));
  return { mean: Array(channels).fill(average(mean)), std: Array(channels).fill(average(std)) };
}

/** The centred region of the picture with the model's aspect ratio, in whole pixels. */
export function cropBox(width, height, outWidth, outHeight) {
  const scale = Math.max(outWidth / width, outHeight / height);
  const w = Math.min(width, roundHalfEven(outWidth / scale));
  const h = Math.min(height, roundHalfEven(outHeight / scale));
  return { left: Math.floor((width - w) / 2), top: Math.floor((height - h) / 2), width: w, height: h };
}

// Python's round(): 2.5 -> 2, so the crop is the one tests/support/picture.py computes.
function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Per output pixel: the first input pixel it reads and its normalized triangle-filter
 *  weights, the filter stretched by the shrink factor (PIL's BILINEAR, torch's antialias). */
export function resizeWeights(sizeIn, sizeOut) {
  const scale = sizeIn / sizeOut, support = Math.max(scale, 1);
  return Array.from({ length: sizeOut }, (_, i) => {
    const center = (i + 0.5) * scale;
    const start = Math.max(Math.trunc(center - support + 0.5), 0);
    const stop = Math.min(Math.trunc(center + support + 0.5), sizeIn);
    const weights = Float64Array.from({ length: stop - start },
      (_, k) => Math.max(0, 1 - Math.abs((start + k - center + 0.5) / support)));
    const total = weights.reduce((a, b) => a + b, 0);
    return { start, weights: weights.map((w) => w / total) };
  });
}

/** RGBA bytes (width x height, row-major) -> Float32Array [1, channels, outHeight, outWidth]. */
export function pictureTensor(rgba, width, height, { channels, outHeight, outWidth, mean, std }) {
  const box = cropBox(width, height, outWidth, outHeight);
  const cols = resizeWeights(box.width, outWidth), rows = resizeWeights(box.height, outHeight);
  const out = new Float32Array(channels * outHeight * outWidth);
  const line = new Float64Array(box.width);
  const wide = new Float64Array(box.height * outWidth); // the crop resized along x only
  for (let c = 0; c < channels; c++) {
    for (let y = 0; y < box.height; y++) {
      const rowStart = ((box.top + y) * width + box.left) * 4;
      for (let x = 0; x < box.width; x++) {
        const p = rowStart + 4 * x;
        line[x] = channels === 1
          ? (LUMA[0] * rgba[p] + LUMA[1] * rgba[p + 1] + LUMA[2] * rgba[p + 2]) / 255
          : rgba[p + c] / 255;
      }
      for (let ox = 0; ox < outWidth; ox++) {
        const { start, weights } = cols[ox];
        let sum = 0;
        for (let k = 0; k < weights.length; k++) sum += weights[k] * line[start + k];
        wide[y * outWidth + ox] = sum;
      }
    }
    for (let oy = 0; oy < outHeight; oy++) {
      const { start, weights } = rows[oy];
      for (let ox = 0; ox < outWidth; ox++) {
        let sum = 0;
        for (let k = 0; k < weights.length; k++) sum += weights[k] * wide[(start + k) * outWidth + ox];
        out[(c * outHeight + oy) * outWidth + ox] = (sum - mean[c]) / std[c];
      }
    }
  }
  return out;
}

/** "0.485, 0.456, 0.406" -> numbers; an Error naming the field unless `count` finite numbers
 *  (positive ones where `positive`). */
export function parseValues(text, count, what, positive = false) {
  const values = text.split(/[\s,]+/).filter(Boolean).map(Number);
  if (values.length !== count || values.some((v) => !Number.isFinite(v) || (positive && v <= 0))) {
    throw new Error(`${what}: expected ${count} ${positive ? "positive " : ""}number${count > 1 ? "s" : ""} ` +
      `(one per channel), got "${text}"`);
  }
  return values;
}

/** A picture file -> {bitmap, width, height, rgba}: the browser decodes it, unchanged in
 *  colour (no colour-space conversion, alpha not premultiplied). */
export async function decodePicture(blob) {
  const bitmap = await createImageBitmap(blob, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
  const canvas = Object.assign(document.createElement("canvas"), { width: bitmap.width, height: bitmap.height });
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.drawImage(bitmap, 0, 0);
  const { data } = context.getImageData(0, 0, bitmap.width, bitmap.height);
  return { bitmap, width: bitmap.width, height: bitmap.height, rgba: data };
}
